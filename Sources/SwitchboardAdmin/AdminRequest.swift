import Foundation
import SwitchboardCore

/// A routed admin request: the HTTP request plus the path parameters its route captured.
public struct AdminRequest: Sendable {
    public let http: HTTPRequest
    public let parameters: [String: String]
    /// Whether the request carries the admin token (or none is configured).
    public let isAdmin: Bool

    /// The bearer credential presented, if any.
    public var bearer: String? {
        guard let header = http.headers["authorization"], header.hasPrefix("Bearer ") else { return nil }
        return String(header.dropFirst(7))
    }

    /// Who is asking, for the audit log.
    public var actor: String { http.remoteAddress.isEmpty ? "unknown" : http.remoteAddress }

    /// Decodes the JSON body as `T`, or fails with `invalid_request`.
    public func decode<T: Decodable>(_ type: T.Type) throws(SwitchboardError) -> T {
        do {
            // No key strategy: it would also rewrite dictionary keys (SFU ids in RTT vectors).
            return try JSONDecoder().decode(T.self, from: Data(http.body))
        } catch {
            throw SwitchboardError(.invalidRequest, "the body must be a JSON object of the documented shape")
        }
    }

    /// An integer query parameter within `range`, or `fallback` when absent.
    /// The `limit` of any list route: one rule for all (``CallQuery/limits``, default
    /// ``CallQuery/defaultLimit``).
    public func pageLimit() throws(SwitchboardError) -> Int {
        try integer("limit", in: CallQuery.limits, default: CallQuery.defaultLimit)
    }

    public func integer(_ name: String, in range: ClosedRange<Int>, default fallback: Int) throws(SwitchboardError) -> Int {
        guard let text = http.query[name] else { return fallback }
        guard let value = Int(text), range.contains(value) else {
            throw SwitchboardError(.invalidRequest, "\(name) must be an integer from \(range.lowerBound) to \(range.upperBound)")
        }
        return value
    }
}

/// JSON bodies for admin responses: snake_case keys, sorted, ISO 8601 dates.
public enum AdminJSON {
    public static func response(_ status: Int, _ value: some Encodable) -> HTTPResponse {
        let encoder = JSONEncoder()
        encoder.keyEncodingStrategy = .convertToSnakeCase
        encoder.outputFormatting = [.sortedKeys]
        encoder.dateEncodingStrategy = .iso8601
        guard let data = try? encoder.encode(value) else {
            return SwitchboardError(.internalError, "response encoding failed").httpResponse
        }
        return .json(status, Array(data))
    }
}
