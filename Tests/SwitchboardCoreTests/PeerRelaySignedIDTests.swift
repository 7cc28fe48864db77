import SwitchboardCore
import XCTest

/// `peerjs.auth = "jwt"` in the core: the host passes the verified token's user; the id must match.
final class PeerRelaySignedIDTests: XCTestCase {
    private func relay() -> PeerRelay {
        var configuration = RelayConfiguration()
        configuration.requireSignedIDs = true
        return PeerRelay(configuration: configuration)
    }

    private let query = ["key": "peerjs", "id": "alice", "token": "jwt"]
    private let connection = ConnectionID(thread: 0, serial: 1)

    func test_theVerifiedUserMustBeTheId() {
        var relay = relay()
        var effects: [RelayEffect] = []
        relay.connectionOpened(connection, query: query, tokenSubject: "alice", now: .zero, into: &effects)
        XCTAssertEqual(effects, [.send(connection, Array(#"{"type":"OPEN"}"#.utf8), receipt: nil)])
        XCTAssertTrue(relay.isRegistered(PeerID("alice")!))
    }

    func test_aSocketIsClosedWhenItsTokenExpiresAndItsIdIsFreed() {
        var relay = relay()
        var effects: [RelayEffect] = []
        let expiry = MonotonicTime.zero.advanced(by: .seconds(30))
        relay.connectionOpened(connection, query: query, tokenSubject: "alice", tokenExpiresAt: expiry, now: .zero, into: &effects)
        effects = []
        relay.tick(now: MonotonicTime.zero.advanced(by: .seconds(29)), into: &effects)
        XCTAssertEqual(effects, [], "not before its exp")
        relay.tick(now: expiry, into: &effects)
        XCTAssertEqual(effects, [
            .send(connection, Array(#"{"type":"ERROR","payload":{"msg":"Token expired"}}"#.utf8), receipt: nil),
            .close(connection, .policyViolation, reason: "token expired"),
        ])
        XCTAssertFalse(relay.isRegistered(PeerID("alice")!))
    }

    func test_anotherUserOrNoVerifiedUserIsRefusedWithInvalidToken() {
        for subject in ["mallory", nil] as [String?] {
            var relay = relay()
            var effects: [RelayEffect] = []
            relay.connectionOpened(connection, query: query, tokenSubject: subject, now: .zero, into: &effects)
            XCTAssertEqual(effects, [
                .send(connection, Array(#"{"type":"ERROR","payload":{"msg":"Invalid token"}}"#.utf8), receipt: nil),
                .close(connection, .policyViolation, reason: "invalid_token"),
            ])
            XCTAssertEqual(relay.stats.refused["invalid_token"], 1)
            XCTAssertFalse(relay.isRegistered(PeerID("alice")!))
        }
    }

    func test_theKeyIsStillCheckedBeforeTheToken() {
        var relay = relay()
        var effects: [RelayEffect] = []
        relay.connectionOpened(connection, query: ["key": "wrong", "id": "alice", "token": "jwt"], tokenSubject: "alice", now: .zero, into: &effects)
        XCTAssertEqual(effects.first, .send(connection, Array(#"{"type":"ERROR","payload":{"msg":"Invalid key provided"}}"#.utf8), receipt: nil))
    }
}
