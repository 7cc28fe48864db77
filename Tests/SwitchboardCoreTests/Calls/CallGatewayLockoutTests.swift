import Foundation
import SwitchboardCore
import XCTest

/// Failed authentications lock out the address, or only the user at it when a genuine token
/// named one: a user with a stale token does not lock out everyone behind the same address.
final class CallGatewayLockoutTests: XCTestCase {
    let shared = "203.0.113.7"
    let expired = SwitchboardError(.tokenExpired, "the token has expired")

    private func configuration() -> CallConfiguration {
        var configuration = CallConfiguration()
        configuration.authFailureBurst = 3
        configuration.authFailuresPerMinute = 1
        return configuration
    }

    /// Opens a socket from `address` with a header token and answers its check.
    private func attempt(
        _ h: inout GatewayHarness, from address: String, _ result: Result<UserToken, SwitchboardError>, namedUser: String? = nil
    ) -> (ConnectionID, JSONValue?, CloseCode?) {
        let socket = h.openSocket(token: "t", from: address)
        if let check = h.last.tokenChecks.first { h.answer(check, result, namedUser: namedUser) }
        let frame = h.last.frames(to: socket).first
        let close = h.last.commands.compactMap { command -> CloseCode? in
            if case .close(socket, let code, _) = command { return code }
            return nil
        }.first
        return (socket, frame, close)
    }

    func test_failuresOfAGenuineTokenLockOutItsUserAtTheAddressOnly() {
        var h = GatewayHarness(configuration())
        for _ in 0..<3 {
            let (_, frame, close) = attempt(&h, from: shared, .failure(expired), namedUser: "mallory")
            XCTAssertEqual(frame?["error"]?["code"], .string("token_expired"))
            XCTAssertEqual(close, .unauthenticated)
        }
        let (_, refused, refusedClose) = attempt(&h, from: shared, .success(h.token("mallory")))
        XCTAssertEqual(refused?["error"]?["code"], .string("rate_limited"), "mallory is locked out here even with a good token")
        XCTAssertEqual(refusedClose, .tryAgainLater)

        let (_, welcome, close) = attempt(&h, from: shared, .success(h.token("grace")))
        XCTAssertEqual(welcome?["type"], .string("connection.ok"), "grace, at the same address, is not")
        XCTAssertNil(close)

        let (_, elsewhere, _) = attempt(&h, from: "198.51.100.99", .success(h.token("mallory")))
        XCTAssertEqual(elsewhere?["type"], .string("connection.ok"), "nor is mallory from another address")

        h.advance(60)
        let (_, cooled, _) = attempt(&h, from: shared, .success(h.token("mallory")))
        XCTAssertEqual(cooled?["type"], .string("connection.ok"), "a failure refills after a minute")
    }

    func test_aTokenTheCoreFindsExpiredCountsAgainstItsUser() {
        var h = GatewayHarness(configuration())
        for _ in 0..<3 {
            let (_, frame, _) = attempt(&h, from: shared, .success(h.token("mallory", expiresIn: -5)))
            XCTAssertEqual(frame?["error"]?["code"], .string("token_expired"))
        }
        XCTAssertEqual(attempt(&h, from: shared, .success(h.token("mallory"))).1?["error"]?["code"], .string("rate_limited"))
        XCTAssertEqual(attempt(&h, from: shared, .success(h.token("grace"))).1?["type"], .string("connection.ok"))
    }

    func test_forgedTokensStillLockOutTheWholeAddressAtOpen() {
        var h = GatewayHarness(configuration())
        for _ in 0..<3 {
            _ = attempt(&h, from: shared, .failure(SwitchboardError(.tokenInvalid, "forged")))
        }
        let socket = h.openSocket(token: "t", from: shared)
        XCTAssertTrue(h.last.tokenChecks.isEmpty, "refused as it opens, before any token check")
        XCTAssertEqual(h.last.frames(to: socket).first?["error"]?["code"], .string("rate_limited"))
        XCTAssertEqual(attempt(&h, from: "198.51.100.99", .success(h.token("grace"))).1?["type"], .string("connection.ok"))
    }
}
