import Foundation
import JWTKit
import SwitchboardAuth
import SwitchboardCore
import XCTest

/// Signed user tokens: HS256 only, exp/nbf/iat with leeway, forged and foreign tokens refused.
final class JWTTokenServiceTests: XCTestCase {
    private let secret = String(repeating: "an-api-secret-", count: 5)  // 70 bytes: long enough for HS512 too
    private let start = Date(timeIntervalSince1970: 1_800_000_000)

    private func service(secret: String? = nil, at date: Date? = nil) async throws -> JWTTokenService {
        let when = date ?? start
        let made = await JWTTokenService(configuration: AuthConfiguration(apiSecret: secret ?? self.secret), now: { when })
        return try XCTUnwrap(made)
    }

    private func code(_ body: () async throws -> Void) async -> String? {
        do {
            try await body()
            return nil
        } catch let error as SwitchboardError {
            return error.code.rawValue
        } catch {
            return "\(error)"
        }
    }

    func test_aMintedTokenVerifiesWithItsClaims() async throws {
        let tokens = try await service()
        let (token, claims) = try await tokens.issue(TokenRequest(userID: "alice", ttl: .seconds(3600), callCIDs: ["default:1"], role: "admin"))
        let verified = try await tokens.verify(token)
        XCTAssertEqual(verified, claims)
        XCTAssertEqual(verified.userID, "alice")
        XCTAssertEqual(verified.expiresAt, start.addingTimeInterval(3600))
        XCTAssertEqual(verified.callCIDs, ["default:1"])
        XCTAssertEqual(verified.role, "admin")
    }

    /// Lockouts count a genuine token's failures against its user; a forged one names nobody.
    func test_aRefusedButGenuineTokenNamesItsUserAndAForgedOneNobody() async throws {
        let (stale, _) = try await service().issue(TokenRequest(userID: "mallory", ttl: .seconds(60)))
        let later = try await service(at: start.addingTimeInterval(3600))
        let refused = await code { _ = try await later.verify(stale) }
        XCTAssertEqual(refused, "token_expired")
        let named = await later.namedUser(ofRefused: stale)
        XCTAssertEqual(named, "mallory")

        let (forged, _) = try await service(secret: String(repeating: "another-secret-", count: 3)).issue(TokenRequest(userID: "grace", ttl: .seconds(60)))
        let nobody = await later.namedUser(ofRefused: forged)
        XCTAssertNil(nobody)
        let garbage = await later.namedUser(ofRefused: "not.a.jwt")
        XCTAssertNil(garbage)
    }

    func test_onlyUserIDsTheCallProtocolAcceptsAreMinted() async throws {
        let tokens = try await service()
        for bad in ["", "bad\u{1}id", "line\nbreak", String(repeating: "u", count: UserID.maximumLength + 1)] {
            do {
                _ = try await tokens.issue(TokenRequest(userID: bad, ttl: .seconds(60)))
                XCTFail("minted a token for \(bad.debugDescription)")
            } catch {
                XCTAssertEqual(error.code, .invalidRequest)
            }
        }
        _ = try await tokens.issue(TokenRequest(userID: String(repeating: "u", count: UserID.maximumLength), ttl: .seconds(60)))
    }

    func test_anExpiredTokenIsRefusedAsExpiredPastTheLeeway() async throws {
        let (token, _) = try await service().issue(TokenRequest(userID: "bob", ttl: .seconds(60)))
        let justInside = try await service(at: start.addingTimeInterval(64))
        _ = try await justInside.verify(token)
        let outside = try await service(at: start.addingTimeInterval(66))
        let result = await code { _ = try await outside.verify(token) }
        XCTAssertEqual(result, "token_expired")
    }

    func test_aTokenSignedWithAnotherSecretIsInvalid() async throws {
        let (token, _) = try await service(secret: String(repeating: "another-secret-", count: 3)).issue(TokenRequest(userID: "eve", ttl: .seconds(60)))
        let result = await code { _ = try await self.service().verify(token) }
        XCTAssertEqual(result, "token_invalid")
    }

    func test_otherAlgorithmsAndAlgNoneAreRefused() async throws {
        let claims = #"{"user_id":"eve","exp":1800003600,"iat":1800000000}"#
        let body = Data(claims.utf8).base64URLEncoded
        let none = Data(#"{"alg":"none","typ":"JWT"}"#.utf8).base64URLEncoded + "." + body + "."
        let hs512Keys = JWTKeyCollection()
        await hs512Keys.add(hmac: HMACKey(from: secret), digestAlgorithm: .sha512, kid: "switchboard")
        struct Claims: JWTPayload {
            var user_id: String
            var exp: ExpirationClaim
            var iat: IssuedAtClaim
            func verify(using algorithm: some JWTAlgorithm) async throws {}
        }
        let hs512 = try await hs512Keys.sign(Claims(user_id: "eve", exp: .init(value: start.addingTimeInterval(3600)), iat: .init(value: start)), kid: "switchboard")
        for token in [none, hs512, "not.a.jwt", "", "a.b"] {
            let result = await code { _ = try await self.service().verify(token) }
            XCTAssertEqual(result, "token_invalid", token)
        }
    }

    /// jwt-kit verifies with the key it holds whatever the header names; the service refuses any
    /// header but HS256 even over a correct HS256 signature.
    func test_aHeaderNamingAnotherAlgorithmIsRefusedEvenOverAValidHS256Signature() async throws {
        let keys = JWTKeyCollection()
        await keys.add(hmac: HMACKey(from: secret), digestAlgorithm: .sha256, kid: "switchboard")
        let hmac = try await keys.getKey(for: "switchboard")
        let body = Data(#"{"user_id":"eve","exp":1800003600,"iat":1800000000}"#.utf8).base64URLEncoded
        func signed(_ header: String) throws -> String {
            let input = Data(header.utf8).base64URLEncoded + "." + body
            return input + "." + Data(try hmac.sign(Array(input.utf8))).base64URLEncoded
        }
        let accepted = try await service().verify(try signed(#"{"alg":"HS256","typ":"JWT","kid":"switchboard"}"#))
        XCTAssertEqual(accepted.userID, "eve", "the same construction with HS256 is accepted")
        for header in [#"{"alg":"none","typ":"JWT"}"#, #"{"alg":"HS512","typ":"JWT"}"#, #"{"alg":"hs256"}"#, #"{"typ":"JWT"}"#, #"{"alg":256}"#, "[]"] {
            let result = await code { _ = try await self.service().verify(try signed(header)) }
            XCTAssertEqual(result, "token_invalid", header)
        }
    }

    func test_notBeforeAndIssuedInTheFutureAreRefused() async throws {
        let keys = JWTKeyCollection()
        await keys.add(hmac: HMACKey(from: secret), digestAlgorithm: .sha256, kid: "switchboard")
        struct Claims: JWTPayload {
            var user_id: String
            var exp: ExpirationClaim
            var iat: IssuedAtClaim
            var nbf: NotBeforeClaim?
            func verify(using algorithm: some JWTAlgorithm) async throws {}
        }
        let future = start.addingTimeInterval(600)
        let notYet = try await keys.sign(Claims(user_id: "a", exp: .init(value: future), iat: .init(value: start), nbf: .init(value: future)), kid: "switchboard")
        let fromTheFuture = try await keys.sign(Claims(user_id: "a", exp: .init(value: future), iat: .init(value: future), nbf: nil), kid: "switchboard")
        for token in [notYet, fromTheFuture] {
            let result = await code { _ = try await self.service().verify(token) }
            XCTAssertEqual(result, "token_invalid")
        }
    }

    func test_aTokenWithoutAUserIsInvalid() async throws {
        let keys = JWTKeyCollection()
        await keys.add(hmac: HMACKey(from: secret), digestAlgorithm: .sha256, kid: "switchboard")
        struct Claims: JWTPayload {
            var exp: ExpirationClaim
            var iat: IssuedAtClaim
            func verify(using algorithm: some JWTAlgorithm) async throws {}
        }
        let token = try await keys.sign(Claims(exp: .init(value: start.addingTimeInterval(60)), iat: .init(value: start)), kid: "switchboard")
        let result = await code { _ = try await self.service().verify(token) }
        XCTAssertEqual(result, "token_invalid")
    }

    func test_noSecretMeansNoTokenService() async {
        let none = await JWTTokenService(configuration: AuthConfiguration(apiSecret: nil))
        XCTAssertNil(none)
        let empty = await JWTTokenService(configuration: AuthConfiguration(apiSecret: ""))
        XCTAssertNil(empty)
        let short = await JWTTokenService(configuration: AuthConfiguration(apiSecret: String(repeating: "x", count: 31)))
        XCTAssertNil(short, "HS256 needs a secret of at least 32 bytes")
    }

    func test_mintingValidatesItsInput() async throws {
        let tokens = try await service()
        for request in [TokenRequest(userID: "", ttl: .seconds(1)), TokenRequest(userID: "a", ttl: .zero), TokenRequest(userID: "a", ttl: .seconds(31 * 86_400))] {
            let result = await code { _ = try await tokens.issue(request) }
            XCTAssertEqual(result, "invalid_request")
        }
    }
}

extension Data {
    var base64URLEncoded: String {
        base64EncodedString().replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_").replacingOccurrences(of: "=", with: "")
    }
}
