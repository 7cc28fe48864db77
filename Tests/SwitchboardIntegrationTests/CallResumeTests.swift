import Foundation
import SwitchboardTesting
import XCTest

/// Resume on `/v1/connect`: a device that loses its socket comes back on the same connection
/// with every event it missed, in order, and keeps its participant sessions; past the resume
/// window its sessions leave with `connection_lost`.
final class CallResumeTests: XCTestCase {
    private let m1: [String: Any] = ["type": "default", "id": "m1"]

    private func with(_ extra: [String: Any]) -> [String: Any] { m1.merging(extra) { _, new in new } }

    /// Waits until the daemon noticed that `client`'s socket is gone.
    private func waitUntilDetached(_ daemon: TestDaemon, _ connectionID: String, file: StaticString = #filePath, line: UInt = #line) throws {
        try waitUntil("connection \(connectionID) is detached", file: file, line: line) {
            try daemon.connectionList().first { $0["connection_id"] as? String == connectionID }?["attached"] as? Bool == false
        }
    }

    func test_aDroppedSocketResumesWithExactlyTheEventsItMissedInOrderAndKeepsItsSession() throws {
        let daemon = try TestDaemon.calls()
        let alice = try daemon.callClient("alice")
        let bob = try daemon.callClient("bob")
        try alice.request("call.join", with(["create": true]))
        let bobSession = try XCTUnwrap(try bob.request("call.join", m1)["session_id"] as? String)
        try alice.event("call.participant_joined")
        try alice.request("call.update_participant", with(["audio": true]))
        XCTAssertEqual(jsonInt(try bob.event("call.participant_updated")["seq"]), 1)

        bob.drop()
        try waitUntilDetached(daemon, bob.connectionID)

        // While bob is away: alice turns video on, sends two custom events, carol joins.
        try alice.request("call.update_participant", with(["video": true]))
        try alice.request("call.send_event", with(["custom": ["n": 1]]))
        try alice.request("call.send_event", with(["custom": ["n": 2]]))
        let carol = try daemon.callClient("carol")
        try carol.request("call.join", m1)

        let back = try CallTestClient.connect(daemon, token: try daemon.mintToken(user: "bob"), name: "bob back", resume: (bob.resumeToken, bob.lastSeq))
        XCTAssertEqual(back.ok["resumed"] as? Bool, true)
        XCTAssertEqual(back.connectionID, bob.connectionID)
        XCTAssertEqual(back.resumeToken, bob.resumeToken)
        XCTAssertEqual(jsonInt(back.ok["replayed"]), 4)
        XCTAssertEqual(back.ok["replay_complete"] as? Bool, true)
        XCTAssertEqual(jsonInt(back.ok["last_seq"]), 5)
        XCTAssertEqual(back.sessions, [bobSession])

        let replay = try (0..<4).map { _ in try back.next() }
        XCTAssertEqual(replay.map { jsonInt($0["seq"]) }, [2, 3, 4, 5])
        XCTAssertEqual(
            replay.map { $0["type"] as? String }, ["call.participant_updated", "call.custom", "call.custom", "call.participant_joined"])
        XCTAssertEqual(jsonAt(replay[0], "data", "participant", "video") as? Bool, true)
        XCTAssertEqual(replay[1...2].map { jsonInt(jsonAt($0, "data", "custom", "n")) }, [1, 2])
        XCTAssertEqual(jsonAt(replay[3], "data", "participant", "user_id") as? String, "carol")
        XCTAssertEqual(try back.pendingTypes(), [], "each missed event exactly once")

        // Bob's session never left: nobody saw it go, and it is still in the call.
        XCTAssertFalse(try alice.pendingTypes().contains("call.participant_left"))
        let state = try back.request("call.get", m1)
        XCTAssertEqual(participantUsers(state), ["alice", "bob", "carol"])
        XCTAssertTrue(participantSessions(state).contains(bobSession))

        // The connection's numbering goes on after the replay.
        try back.request("call.send_event", with(["custom": ["n": 3]]))
        XCTAssertEqual(jsonInt(try back.event("call.custom")["seq"]), 6)
        XCTAssertEqual(
            try alice.takeInbox().filter { $0["type"] as? String == "call.custom" }.map { jsonAt($0, "data", "user_id") as? String },
            ["alice", "alice", "bob"])
    }

    func test_aResumeOlderThanTheReplayBufferReplaysWhatIsLeftAndSaysItIsIncomplete() throws {
        let daemon = try TestDaemon.calls(["connect.replay_buffer": .int(2)])
        let alice = try daemon.callClient("alice")
        let bob = try daemon.callClient("bob")
        try alice.request("call.join", with(["create": true]))
        try bob.request("call.join", m1)
        bob.drop()
        try waitUntilDetached(daemon, bob.connectionID)
        for n in 1...4 { try alice.request("call.send_event", with(["custom": ["n": n]])) }

        let back = try CallTestClient.connect(daemon, token: try daemon.mintToken(user: "bob"), name: "bob back", resume: (bob.resumeToken, 0))
        XCTAssertEqual(back.ok["resumed"] as? Bool, true)
        XCTAssertEqual(jsonInt(back.ok["replayed"]), 2)
        XCTAssertEqual(back.ok["replay_complete"] as? Bool, false)
        XCTAssertEqual(jsonInt(back.ok["last_seq"]), 4)
        let replay = try (0..<2).map { _ in try back.next() }
        XCTAssertEqual(replay.map { jsonInt($0["seq"]) }, [3, 4])
        XCTAssertEqual(replay.map { jsonInt(jsonAt($0, "data", "custom", "n")) }, [3, 4])
        XCTAssertEqual(try back.pendingTypes(), [])
    }

    func test_aResumeFromAnotherSocketTakesTheConnectionOverAndClosesTheOldSocketWith4002() throws {
        let daemon = try TestDaemon.calls()
        let bob = try daemon.callClient("bob")
        let session = try XCTUnwrap(try bob.request("call.join", with(["create": true]))["session_id"] as? String)

        let second = try CallTestClient.connect(daemon, token: try daemon.mintToken(user: "bob"), name: "bob 2", resume: (bob.resumeToken, 0))
        XCTAssertEqual(second.ok["resumed"] as? Bool, true)
        XCTAssertEqual(second.sessions, [session])
        XCTAssertEqual(try bob.awaitClose().code, 4002)

        // Through the upgrade: a bearer token and the resume in the query.
        let token = try daemon.mintToken(user: "bob")
        let third = try CallTestClient.open(
            daemon, name: "bob 3", query: "?resume_token=\(second.resumeToken)&last_seq=0", headers: ["Authorization": "Bearer \(token)"])
        try third.awaitConnectionOK()
        XCTAssertEqual(third.ok["resumed"] as? Bool, true)
        XCTAssertEqual(third.connectionID, bob.connectionID)
        XCTAssertEqual(third.sessions, [session])
        XCTAssertEqual(try second.awaitClose().code, 4002)

        // Another user cannot take the connection with its resume token.
        let mallory = try CallTestClient.connect(daemon, token: try daemon.mintToken(user: "mallory"), name: "mallory", resume: (bob.resumeToken, 0))
        XCTAssertEqual(mallory.ok["resumed"] as? Bool, false)
        XCTAssertNotEqual(mallory.connectionID, bob.connectionID)
        XCTAssertEqual(mallory.sessions, [])
        try third.ping()
    }

    func test_pastTheResumeWindowTheSessionsOfADroppedConnectionLeaveWithConnectionLost() throws {
        let daemon = try TestDaemon.calls(["connect.resume_window_ms": .int(500)], wallClock: ManualWallClock())
        let alice = try daemon.callClient("alice")
        let bob = try daemon.callClient("bob")
        try alice.request("call.join", with(["create": true]))
        let bobSession = try XCTUnwrap(try bob.request("call.join", m1)["session_id"] as? String)
        try alice.event("call.participant_joined")

        bob.drop()
        try waitUntilDetached(daemon, bob.connectionID)
        daemon.advance(by: .milliseconds(499))
        XCTAssertFalse(try alice.pendingTypes().contains("call.participant_left"), "left before the resume window passed")
        daemon.advance(by: .milliseconds(2))
        let left = try alice.event("call.participant_left")
        XCTAssertEqual(jsonAt(left, "data", "participant", "session_id") as? String, bobSession)
        XCTAssertEqual(jsonAt(left, "data", "participant", "user_id") as? String, "bob")
        XCTAssertEqual(jsonAt(left, "data", "participant", "reason") as? String, "connection_lost")
        XCTAssertEqual(participantUsers(try alice.request("call.get", m1)), ["alice"])
        XCTAssertEqual(try daemon.connectionList().map { $0["user_id"] as? String }, ["alice"])
        let stored = try daemon.storedCall("default", "m1")
        XCTAssertEqual(
            jsonObjects(stored["sessions"]).first { $0["session_id"] as? String == bobSession }?["left_reason"] as? String, "connection_lost")

        // The resume token is spent: presenting it starts a new connection.
        let late = try CallTestClient.connect(daemon, token: try daemon.mintToken(user: "bob"), name: "bob late", resume: (bob.resumeToken, bob.lastSeq))
        XCTAssertEqual(late.ok["resumed"] as? Bool, false)
        XCTAssertNotEqual(late.connectionID, bob.connectionID)
        XCTAssertEqual(late.sessions, [])
    }

    func test_aSilentSocketIsClosedAfterTheIdleTimeoutWith4003WhileOneThatPingsStaysOpen() throws {
        let daemon = try TestDaemon.calls(["connect.idle_timeout_ms": .int(1000)], wallClock: ManualWallClock())
        let silent = try daemon.callClient("silent")
        let pinging = try daemon.callClient("pinging")
        let attached = { try daemon.connectionList().map { "\($0["user_id"] as? String ?? ""):\($0["attached"] as? Bool ?? true)" }.sorted() }
        daemon.advance(by: .milliseconds(999))
        try pinging.ping()
        XCTAssertEqual(try attached(), ["pinging:true", "silent:true"], "closed before the idle timeout")
        daemon.advance(by: .milliseconds(2))
        XCTAssertEqual(try silent.awaitClose().code, 4003)
        // Pinging keeps a socket open well past the idle timeout.
        for _ in 0..<5 {
            daemon.advance(by: .milliseconds(300))
            try pinging.ping()
        }
        // The silent device's connection waits for a resume.
        XCTAssertEqual(try attached(), ["pinging:true", "silent:false"])
    }

    func test_anInitiatorWhoseConnectionIsLostEndsARingingCall() throws {
        let daemon = try TestDaemon.calls(["connect.resume_window_ms": .int(500)], wallClock: ManualWallClock())
        let alice = try daemon.callClient("alice")
        let bob = try daemon.callClient("bob")
        let aliceSession = try XCTUnwrap(
            try alice.request("call.join", ["type": "ringing", "id": "r1", "create": true, "ring": true, "members": ["bob"]])["session_id"] as? String)
        try bob.event("call.ring")
        try bob.request("call.join", ["type": "ringing", "id": "r1"])
        alice.drop()
        try waitUntilDetached(daemon, alice.connectionID)
        daemon.advance(by: .milliseconds(499))
        XCTAssertFalse(try bob.pendingTypes().contains("call.participant_left"), "left before the resume window passed")
        daemon.advance(by: .milliseconds(2))
        let left = try bob.event("call.participant_left")
        XCTAssertEqual(jsonAt(left, "data", "participant", "session_id") as? String, aliceSession)
        XCTAssertEqual(jsonAt(left, "data", "participant", "reason") as? String, "connection_lost")
        XCTAssertEqual(jsonAt(try bob.event("call.ended"), "data", "reason") as? String, "initiator_left")
        XCTAssertEqual(jsonAt(try daemon.storedCall("ringing", "r1"), "call", "ended_reason") as? String, "initiator_left")
    }
}
