import Foundation
import SwitchboardCore

/// A token verifier for hub tests: every token is valid for an hour and names the user it spells.
public struct UserIDTokenVerifier: TokenVerifier {
    public init() {}

    public func verify(_ token: String) async throws(SwitchboardError) -> UserToken {
        UserToken(userID: token, issuedAt: Date(), expiresAt: Date(timeIntervalSinceNow: 3600))
    }
}
