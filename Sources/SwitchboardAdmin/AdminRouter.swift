import SwitchboardCore

/// Maps method and path to a route handler, checks the bearer token, and turns every failure
/// into a JSON error with the right status.
public struct AdminRouter: Sendable {
    /// A route handler: a plain function from a request value to a response value.
    public typealias Handler = @Sendable (AdminRequest) throws(SwitchboardError) -> HTTPResponse

    struct Route: Sendable {
        let method: String
        let segments: [String]
        let requiresToken: Bool
        let handler: Handler
    }

    private var routes: [Route] = []
    private let token: String?
    private let policy: AdminRequestPolicy

    /// A router that requires `token` (none when `nil`) and refuses requests `policy` refuses.
    public init(token: String?, policy: AdminRequestPolicy = AdminRequestPolicy()) {
        self.token = token
        self.policy = policy
    }

    /// Adds a route. Segments starting with `:` capture a parameter.
    public mutating func add(_ method: String, _ path: String, public isPublic: Bool = false, _ handler: @escaping Handler) {
        routes.append(Route(method: method, segments: Self.segments(path), requiresToken: !isPublic, handler: handler))
    }

    /// Answers one request.
    public func respond(to request: HTTPRequest) -> HTTPResponse {
        if let refusal = policy.refusal(for: request) { return refusal.httpResponse }
        let segments = Self.segments(request.path)
        let matching = routes.compactMap { route in Self.match(route.segments, segments).map { (route, $0) } }
        guard !matching.isEmpty else {
            return SwitchboardError(.notFound, "no route for \(request.path)").httpResponse
        }
        guard let (route, parameters) = matching.first(where: { $0.0.method == request.method || ($0.0.method == "GET" && request.method == "HEAD") })
        else {
            var response = SwitchboardError(.methodNotAllowed, "\(request.method) is not allowed on \(request.path)").httpResponse
            var methods = matching.map(\.0.method)
            if methods.contains("GET") { methods.append("HEAD") }
            response.headers.append(("Allow", methods.joined(separator: ", ")))
            return response
        }
        let failure = authenticate(request)
        if route.requiresToken, let failure { return failure }
        do {
            return try route.handler(AdminRequest(http: request, parameters: parameters, isAdmin: failure == nil))
        } catch {
            var response = error.httpResponse
            if error.code.category == .unauthorized { response.headers.append(("WWW-Authenticate", "Bearer")) }
            return response
        }
    }

    private func authenticate(_ request: HTTPRequest) -> HTTPResponse? {
        guard let token else { return nil }
        let header = request.headers["authorization"] ?? ""
        let presented = header.hasPrefix("Bearer ") ? String(header.dropFirst(7)) : ""
        guard !presented.isEmpty, ConstantTime.equals(presented, token) else {
            var response = SwitchboardError(.unauthenticated, "a valid admin bearer token is required").httpResponse
            response.headers.append(("WWW-Authenticate", "Bearer"))
            return response
        }
        return nil
    }

    private static func segments(_ path: String) -> [String] {
        path.split(separator: "/", omittingEmptySubsequences: true).map(String.init)
    }

    private static func match(_ pattern: [String], _ path: [String]) -> [String: String]? {
        guard pattern.count == path.count else { return nil }
        var parameters: [String: String] = [:]
        for (expected, actual) in zip(pattern, path) {
            if expected.hasPrefix(":") {
                parameters[String(expected.dropFirst())] = actual
            } else if expected != actual {
                return nil
            }
        }
        return parameters
    }
}
