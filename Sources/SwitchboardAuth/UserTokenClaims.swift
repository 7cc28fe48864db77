import Foundation
import JWTKit

/// The JWT payload of a user token. `user_id` or `sub` names the user.
struct UserTokenClaims: JWTPayload {
    var sub: SubjectClaim?
    var userID: String?
    var exp: ExpirationClaim
    var iat: IssuedAtClaim
    var nbf: NotBeforeClaim?
    var callCIDs: [String]?
    var role: String?

    enum CodingKeys: String, CodingKey {
        case sub, exp, iat, nbf, role
        case userID = "user_id"
        case callCIDs = "call_cids"
    }

    /// Time checks happen in ``JWTTokenService`` with the configured leeway; the signature is
    /// checked by jwt-kit before this runs.
    func verify(using algorithm: some JWTAlgorithm) async throws {}

    var user: String? { userID ?? sub?.value }
}
