import Foundation
import JWTKit
import SwitchboardCore

/// HS256 user tokens through jwt-kit: the only algorithm accepted is HMAC-SHA256 with the
/// configured API secret; `exp`, `nbf` and `iat` are checked with a small leeway.
public struct JWTTokenService: TokenVerifier, TokenIssuer {
    private let keys: JWTKeyCollection
    private let configuration: AuthConfiguration
    private let now: @Sendable () -> Date

    /// The shortest secret HS256 accepts (its output size).
    public static let minimumSecretBytes = 32
    /// The latest `exp` accepted: 9999-12-31, the last date the store can hold.
    public static let latestExpiry: TimeInterval = 253_402_214_400

    /// `nil` when no API secret, or one shorter than ``minimumSecretBytes``, is configured.
    public init?(configuration: AuthConfiguration, now: @escaping @Sendable () -> Date = { Date() }) async {
        guard let secret = configuration.apiSecret, secret.utf8.count >= Self.minimumSecretBytes else { return nil }
        self.configuration = configuration
        self.now = now
        keys = JWTKeyCollection()
        await keys.add(hmac: HMACKey(from: secret), digestAlgorithm: .sha256, kid: JWKIdentifier(string: configuration.apiKey))
    }

    public func verify(_ token: String) async throws(SwitchboardError) -> UserToken {
        let claims: UserTokenClaims
        do {
            // jwt-kit checks the signature with the key it holds whatever the header says, so a
            // header naming another algorithm (or `none`) over an HS256 signature is refused here.
            guard Self.algorithm(of: token) == "HS256" else { throw SwitchboardError(.tokenInvalid, "not HS256") }
            claims = try await keys.verify(token, as: UserTokenClaims.self)
        } catch {
            throw SwitchboardError(.tokenInvalid, "the token's signature, algorithm or format is not valid")
        }
        let now = now()
        let leeway = TimeInterval(configuration.leeway.milliseconds) / 1000
        guard let user = claims.user, !user.isEmpty, user.utf8.count <= 256 else {
            throw SwitchboardError(.tokenInvalid, "the token names no user (user_id or sub)")
        }
        guard claims.exp.value.addingTimeInterval(leeway) > now else { throw SwitchboardError(.tokenExpired, "the token has expired") }
        // An exp in milliseconds (year 50000+) would be stored as a date SQLite cannot read back.
        guard claims.exp.value.timeIntervalSince1970 < Self.latestExpiry else {
            throw SwitchboardError(.tokenInvalid, "the token's exp is too far in the future (seconds since 1970 expected)")
        }
        if let nbf = claims.nbf, nbf.value.addingTimeInterval(-leeway) > now {
            throw SwitchboardError(.tokenInvalid, "the token is not valid yet (nbf)")
        }
        guard claims.iat.value.addingTimeInterval(-leeway) <= now else {
            throw SwitchboardError(.tokenInvalid, "the token was issued in the future (iat)")
        }
        return UserToken(userID: user, issuedAt: claims.iat.value, expiresAt: claims.exp.value, callCIDs: claims.callCIDs, role: claims.role)
    }

    /// The user of a token whose HS256 signature is genuine, whatever its times say.
    public func namedUser(ofRefused token: String) async -> String? {
        guard Self.algorithm(of: token) == "HS256", let claims = try? await keys.verify(token, as: UserTokenClaims.self) else { return nil }
        return claims.user
    }

    public func issue(_ request: TokenRequest) async throws(SwitchboardError) -> (token: String, claims: UserToken) {
        // The call protocol's rule for user ids, so no token names a user /v1/connect refuses.
        guard UserID(request.userID) != nil else {
            throw SwitchboardError(.invalidRequest, "user_id must be 1–\(UserID.maximumLength) bytes without control characters")
        }
        guard request.ttl > .zero, request.ttl <= .seconds(30 * 86_400) else {
            throw SwitchboardError(.invalidRequest, "ttl must be between 1 second and 30 days")
        }
        let issued = Date(timeIntervalSince1970: now().timeIntervalSince1970.rounded(.down))
        let expires = issued.addingTimeInterval(TimeInterval(request.ttl.milliseconds) / 1000)
        let claims = UserTokenClaims(
            sub: SubjectClaim(value: request.userID), userID: request.userID, exp: ExpirationClaim(value: expires),
            iat: IssuedAtClaim(value: issued), nbf: nil, callCIDs: request.callCIDs, role: request.role)
        do {
            let token = try await keys.sign(claims, kid: JWKIdentifier(string: configuration.apiKey))
            return (token, UserToken(userID: request.userID, issuedAt: issued, expiresAt: expires, callCIDs: request.callCIDs, role: request.role))
        } catch {
            throw SwitchboardError(.internalError, "signing failed")
        }
    }

    /// The `alg` of a compact JWS's header; `nil` when the header is not base64url JSON with a
    /// string `alg`.
    static func algorithm(of token: String) -> String? {
        guard let encoded = token.split(separator: ".", maxSplits: 1, omittingEmptySubsequences: false).first,
              encoded.utf8.count <= 1024
        else { return nil }
        var base64 = encoded.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        base64 += String(repeating: "=", count: (4 - base64.utf8.count % 4) % 4)
        guard let data = Data(base64Encoded: base64),
              let header = try? JSONSerialization.jsonObject(with: data) as? [String: Any]
        else { return nil }
        return header["alg"] as? String
    }
}
