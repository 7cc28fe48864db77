import Foundation
import SwitchboardTesting

/// Hand-made JWTs for the call-protocol tests: forged, expired, `alg: none` and HS512 tokens
/// the admin API will not mint. The integration target does not depend on jwt-kit or
/// swift-crypto, so they are signed with `TestHMAC` from SwitchboardTesting (checked against
/// known vectors and against a token the daemon minted, see `CallAuthTests`).
enum TestJWT {
    enum Algorithm: String {
        case hs256 = "HS256"
        case hs512 = "HS512"
        case none
    }

    /// A compact JWS with the given header `alg` and claims. `kid` defaults to the daemon's
    /// default `auth.api_key`.
    static func make(
        _ claims: [String: Any], secret: String, algorithm: Algorithm = .hs256, kid: String? = "switchboard"
    ) -> String {
        var header: [String: Any] = ["alg": algorithm.rawValue, "typ": "JWT"]
        if let kid { header["kid"] = kid }
        let signingInput = base64URL(json(header)) + "." + base64URL(json(claims))
        switch algorithm {
        case .none: return signingInput + "."
        case .hs256: return signingInput + "." + base64URL(TestHMAC.sha256(key: Array(secret.utf8), message: Array(signingInput.utf8)))
        case .hs512: return signingInput + "." + base64URL(TestHMAC.sha512(key: Array(secret.utf8), message: Array(signingInput.utf8)))
        }
    }

    /// Claims for `user` valid from `issuedAt` until `expiresAt`.
    static func claims(user: String, issuedAt: Date = Date(), expiresAt: Date, extra: [String: Any] = [:]) -> [String: Any] {
        var claims: [String: Any] = [
            "user_id": user, "sub": user, "iat": Int(issuedAt.timeIntervalSince1970), "exp": Int(expiresAt.timeIntervalSince1970),
        ]
        claims.merge(extra) { _, new in new }
        return claims
    }

    static func json(_ object: [String: Any]) -> [UInt8] {
        Array(try! JSONSerialization.data(withJSONObject: object, options: [.sortedKeys]))
    }

    static func base64URL(_ bytes: [UInt8]) -> String {
        Data(bytes).base64EncodedString().replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
            .replacingOccurrences(of: "=", with: "")
    }

    static func hex(_ bytes: [UInt8]) -> String { bytes.map { String(format: "%02x", $0) }.joined() }
}
