import Foundation
import SwitchboardCore

/// `POST /dev/token` on the client listener: user tokens for the demo app and local
/// development, with no backend of one's own. It exists only when `auth.dev_tokens` is on
/// (`switchboard serve --dev`), and answers only clients on a loopback address: anyone who can
/// reach it can be any user, so it is never for a deployment.
///
/// Body `{"user_id": "alice", "ttl_seconds": 3600}` (ttl 1 s–24 h, default 1 h); the answer is
/// the admin API's `POST /v1/tokens` answer. No role and no call list: a development token is a
/// plain user's.
public struct DevTokenRoute: Sendable {
    /// The route's path.
    public static let path = "/dev/token"
    /// The longest lifetime it mints.
    public static let maxTTLSeconds = 86_400

    /// Mints a token: the same minting as the admin API's (``AdminContext/mintToken(_:)``).
    let mint: @Sendable (TokenRequest) throws(SwitchboardError) -> (token: String, claims: UserToken)

    public init(mint: @escaping @Sendable (TokenRequest) throws(SwitchboardError) -> (token: String, claims: UserToken)) {
        self.mint = mint
    }

    public func respond(to request: HTTPRequest) -> HTTPResponse {
        var response: HTTPResponse
        do throws(SwitchboardError) {
            response = try answer(request)
        } catch {
            response = error.httpResponse
        }
        response.headers.append(("Cache-Control", "no-store"))
        return response
    }

    private func answer(_ request: HTTPRequest) throws(SwitchboardError) -> HTTPResponse {
        guard request.method == "POST" else {
            var response = SwitchboardError(.methodNotAllowed, "development tokens are minted with POST").httpResponse
            response.headers.append(("Allow", "POST"))
            return response
        }
        guard Self.isLoopback(request.remoteAddress) else {
            throw SwitchboardError(.forbidden, "development tokens are served only to clients on a loopback address")
        }
        struct Body: Decodable {
            let userId: String
            let ttlSeconds: Int?
            enum CodingKeys: String, CodingKey { case userId = "user_id", ttlSeconds = "ttl_seconds" }
        }
        let body = try AdminRequest(http: request, parameters: [:], isAdmin: false).decode(Body.self)
        let ttl = body.ttlSeconds ?? 3600
        guard (1...Self.maxTTLSeconds).contains(ttl) else {
            throw SwitchboardError(.invalidRequest, "ttl_seconds must be from 1 to \(Self.maxTTLSeconds)")
        }
        return AdminRoutes.minted201(try mint(TokenRequest(userID: body.userId, ttl: .seconds(ttl))))
    }

    /// A loopback peer: 127.0.0.0/8, ::1, or IPv4-mapped 127.0.0.0/8.
    static func isLoopback(_ address: String) -> Bool {
        let lowered = address.lowercased()
        let mapped = lowered.hasPrefix("::ffff:") ? String(lowered.dropFirst(7)) : lowered
        return AdminRequestPolicy.isLoopbackAddress(mapped)
    }
}
