import Foundation

/// What a verified user token says: who, until when, and what it may touch.
public struct UserToken: Sendable, Equatable {
    public var userID: String
    public var issuedAt: Date
    public var expiresAt: Date
    /// The only calls (`type:id`) this token may touch; `nil` for any.
    public var callCIDs: [String]?
    /// `admin` may end any call.
    public var role: String?

    public init(userID: String, issuedAt: Date, expiresAt: Date, callCIDs: [String]? = nil, role: String? = nil) {
        self.userID = userID
        self.issuedAt = issuedAt
        self.expiresAt = expiresAt
        self.callCIDs = callCIDs
        self.role = role
    }
}

/// A token to mint.
public struct TokenRequest: Sendable, Equatable, Codable {
    public var userID: String
    public var ttl: Duration
    public var callCIDs: [String]?
    public var role: String?

    public init(userID: String, ttl: Duration, callCIDs: [String]? = nil, role: String? = nil) {
        self.userID = userID
        self.ttl = ttl
        self.callCIDs = callCIDs
        self.role = role
    }
}

/// The port that checks signed user tokens (HS256 JWTs). Errors carry the wire codes
/// `token_expired` or `token_invalid`.
public protocol TokenVerifier: Sendable {
    func verify(_ token: String) async throws(SwitchboardError) -> UserToken
    /// The user a refused token names when its signature is genuine (it expired, is not valid
    /// yet, …); `nil` for a forged or malformed token. Failed authentications are then counted
    /// against that user at the address, not against everyone behind the address.
    func namedUser(ofRefused token: String) async -> String?
}

extension TokenVerifier {
    public func namedUser(ofRefused token: String) async -> String? { nil }
}

/// The port that mints user tokens (for operators, tests and `switchboard token`).
public protocol TokenIssuer: Sendable {
    func issue(_ request: TokenRequest) async throws(SwitchboardError) -> (token: String, claims: UserToken)
}
