import Configuration
import Foundation
import SwitchboardApp
import SwitchboardCore
import SwitchboardTesting
import XCTest

/// Call state survives a daemon restart: rings still going, participant sessions and their
/// connections (resumed within the window), and ring deadlines, which fire at start when they
/// passed while the daemon was down.
final class CallRestartTests: XCTestCase {
    private let r1: [String: Any] = ["type": "ringing", "id": "r1"]

    /// A daemon whose shutdown does not wait long for clients that do not answer the close.
    private func daemon(_ overrides: [String: ConfigContent] = [:], wallClock: ManualWallClock? = nil) throws -> TestDaemon {
        try TestDaemon.calls(overrides.merging(["shutdown.drain_timeout_ms": .int(300)]) { mine, _ in mine }, wallClock: wallClock)
    }

    func test_aRingAndThenACallSurviveRestartsAndTheirConnectionsResumeWithTheirSessions() throws {
        let daemon = try daemon()
        let alice = try daemon.callClient("alice")
        try alice.request("call.get_or_create", r1.merging(["members": ["bob"], "ring": true]) { _, new in new })
        let stored = try daemon.storedCall("ringing", "r1")
        let deadline = try XCTUnwrap(jsonInt(jsonObjects(stored["members"]).first { $0["user_id"] as? String == "bob" }?["ring_deadline"]))

        // Restart while bob is being rung (he has not connected yet).
        try daemon.restart()
        let bob = try daemon.callClient("bob")
        let ring = try bob.event("call.ring")
        XCTAssertEqual(ring["call_cid"] as? String, "ringing:r1")
        XCTAssertEqual(jsonAt(ring, "data", "from") as? String, "alice")
        XCTAssertEqual(jsonInt(jsonAt(ring, "data", "ring_deadline")), deadline, "the ring keeps its stored deadline")
        XCTAssertEqual(memberStates(try bob.request("call.accept", r1)), ["alice:none", "bob:accepted"])
        let bobSession = try XCTUnwrap(try bob.request("call.join", r1)["session_id"] as? String)

        // Alice's connection was restored: she resumes it and gets the accept she missed.
        let alice2 = try CallTestClient.connect(
            daemon, token: try daemon.mintToken(user: "alice"), name: "alice after restart", resume: (alice.resumeToken, alice.lastSeq))
        XCTAssertEqual(alice2.ok["resumed"] as? Bool, true)
        XCTAssertEqual(alice2.connectionID, alice.connectionID)
        XCTAssertEqual(jsonAt(try alice2.event("call.accepted"), "data", "user_id") as? String, "bob")
        let aliceJoin = try alice2.request("call.join", r1)
        let aliceSession = try XCTUnwrap(aliceJoin["session_id"] as? String)
        XCTAssertEqual(aliceJoin["role"] as? String, "initiator")
        XCTAssertEqual(participantSessions(aliceJoin), [aliceSession, bobSession])
        try bob.event("call.participant_joined")

        // Restart in the middle of the call; both come back within the resume window.
        try daemon.restart()
        let bob3 = try CallTestClient.connect(daemon, token: try daemon.mintToken(user: "bob"), name: "bob after restart", resume: (bob.resumeToken, bob.lastSeq))
        let alice3 = try CallTestClient.connect(
            daemon, token: try daemon.mintToken(user: "alice"), name: "alice after 2nd restart", resume: (alice2.resumeToken, alice2.lastSeq))
        for (client, before, session) in [(bob3, bob, bobSession), (alice3, alice2, aliceSession)] {
            XCTAssertEqual(client.ok["resumed"] as? Bool, true, client.name)
            XCTAssertEqual(client.connectionID, before.connectionID, client.name)
            XCTAssertEqual(client.sessions, [session], client.name)
        }
        let state = try alice3.request("call.get", r1)
        XCTAssertTrue(jsonAt(state, "call", "ended_at") is NSNull)
        XCTAssertEqual(participantSessions(state), [aliceSession, bobSession])
        XCTAssertEqual(jsonObjects(state["participants"]).map { $0["role"] as? String }, ["initiator", "participant"])
        XCTAssertFalse(try alice3.pendingTypes().contains("call.participant_left"))
        XCTAssertFalse(try bob3.pendingTypes().contains("call.participant_left"))

        // The call goes on.
        try bob3.request("call.update_participant", r1.merging(["audio": true]) { _, new in new })
        XCTAssertEqual(jsonAt(try alice3.event("call.participant_updated"), "data", "participant", "session_id") as? String, bobSession)
        try alice3.request("call.end", r1)
        XCTAssertEqual(jsonAt(try bob3.event("call.ended"), "data", "reason") as? String, "ended_by_user")
    }

    /// Events a restored connection is sent while it waits for its client (after a restart)
    /// must reach the client when it resumes, numbered after the last `seq` it saw, or the
    /// server must say the replay is incomplete.
    func test_eventsAConnectionMissedAfterARestartAreReplayedOnResumeAfterItsLastSeq() throws {
        let daemon = try daemon()
        let m1: [String: Any] = ["type": "default", "id": "m1"]
        let alice = try daemon.callClient("alice")
        let bob = try daemon.callClient("bob")
        try alice.request("call.join", m1.merging(["create": true]) { _, new in new })
        try bob.request("call.join", m1)
        try alice.event("call.participant_joined")
        try bob.request("call.send_event", m1.merging(["custom": ["n": 0]]) { _, new in new })
        try alice.event("call.custom")
        try bob.event("call.custom")
        XCTAssertEqual(alice.lastSeq, 2)

        try daemon.restart()
        let bob2 = try CallTestClient.connect(daemon, token: try daemon.mintToken(user: "bob"), name: "bob after restart", resume: (bob.resumeToken, bob.lastSeq))
        XCTAssertEqual(bob2.ok["resumed"] as? Bool, true)
        for n in 1...3 { try bob2.request("call.send_event", m1.merging(["custom": ["n": n]]) { _, new in new }) }

        // Alice was seeing seq 2 when the daemon went down; she resumes from there.
        let alice2 = try CallTestClient.connect(
            daemon, token: try daemon.mintToken(user: "alice"), name: "alice after restart", resume: (alice.resumeToken, alice.lastSeq))
        XCTAssertEqual(alice2.ok["resumed"] as? Bool, true)
        let complete = alice2.ok["replay_complete"] as? Bool
        let received = try alice2.takeInbox().filter { $0["type"] as? String == "call.custom" }
        let numbers = received.map { jsonInt(jsonAt($0, "data", "custom", "n")) ?? -1 }
        let seqs = received.map { jsonInt($0["seq"]) ?? -1 }
        let observed = "replayed=\(alice2.ok["replayed"] ?? "?") last_seq=\(alice2.ok["last_seq"] ?? "?") replay_complete=\(complete.map(String.init) ?? "nil"), then custom events \(numbers) with seqs \(seqs)"
        // docs/protocol.md 6.11: replay_complete is false when "the daemon restarted since".
        XCTAssertEqual(complete, false, "resume after a restart must not vouch for a complete replay: \(observed)")
        // Every event numbered for the restored connection is replayed, in order. After a
        // restart seq jumps above anything sent before it (the daemon cannot know how far it
        // got), so the numbers go on increasing but not from 3.
        XCTAssertEqual(numbers, [1, 2, 3], "events numbered for the restored connection were lost: \(observed)")
        XCTAssertEqual(seqs.count, 3)
        XCTAssertGreaterThan(seqs.first ?? 0, 2, "seq must stay above the last one the client saw: \(observed)")
        XCTAssertEqual(seqs, seqs.sorted(), "replayed in seq order: \(observed)")
        XCTAssertEqual(Set(seqs).count, 3)
        XCTAssertEqual(jsonInt(alice2.ok["replayed"]), 3)
    }

    func test_aRingDeadlineThatPassedWhileTheDaemonWasDownFiresAtStart() throws {
        let clock = ManualWallClock()
        let daemon = try daemon(["call_types.ringing.incoming_timeout_ms": .int(3000)], wallClock: clock)
        let alice = try daemon.callClient("alice")
        try alice.request("call.get_or_create", ["type": "ringing", "id": "r9", "members": ["bob"], "ring": true])
        let stored = try daemon.storedCall("ringing", "r9")
        let deadline = try XCTUnwrap(jsonInt(jsonObjects(stored["members"]).first { $0["user_id"] as? String == "bob" }?["ring_deadline"]))
        alice.drop()

        let bobsRing = {
            daemon.daemon.calls?.withGateway { gateway in
                gateway.engine.call(CallCID(type: "ringing", id: "r9")!)?.members[UserID("bob")!]?.ringState.rawValue
            }
        }
        daemon.stop()
        // The ring was still going when the daemon stopped.
        XCTAssertEqual(bobsRing(), "ringing")
        XCTAssertLessThan(milliseconds(clock.now()), deadline, "the deadline passed before the daemon stopped: the test proves nothing")

        // Down until just before the deadline: the ring is still going at start.
        clock.advance(by: .milliseconds(deadline - 1 - milliseconds(clock.now())))
        try daemon.restart()
        XCTAssertEqual(bobsRing(), "ringing", "the ring stopped before its deadline")
        daemon.stop()

        // Let the deadline pass while nothing runs, then start again.
        clock.advance(by: .milliseconds(101))
        try daemon.restart()
        try waitUntil("the missed ring fired at start") {
            jsonAt(try daemon.storedCall("ringing", "r9"), "call", "ended_reason") as? String == "no_answer"
        }
        let after = try daemon.storedCall("ringing", "r9")
        XCTAssertEqual(memberStates(after), ["alice:none", "bob:missed"])
        XCTAssertGreaterThanOrEqual(jsonInt(jsonAt(after, "call", "ended_at")) ?? 0, deadline)
        XCTAssertEqual(Array(jsonObjects(after["events"]).compactMap { $0["type"] as? String }.suffix(2)), ["call.missed", "call.ended"])

        // The caller's connection kept what it was sent: call.missed, then call.ended.
        let back = try CallTestClient.connect(daemon, token: try daemon.mintToken(user: "alice"), name: "alice back", resume: (alice.resumeToken, alice.lastSeq))
        XCTAssertEqual(back.ok["resumed"] as? Bool, true)
        XCTAssertEqual(try back.event("call.missed")["call_cid"] as? String, "ringing:r9")
        XCTAssertEqual(jsonAt(try back.event("call.ended"), "data", "reason") as? String, "no_answer")
        // Bob connecting now is not rung.
        let bob = try daemon.callClient("bob")
        XCTAssertEqual(try bob.pendingTypes(), [])
    }

    func test_aLiveCallKeepsItsSFUAcrossARestart() throws {
        let daemon = try daemon()
        let heartbeat = { () throws -> Int in
            try daemon.admin("POST", "/v1/sfus/sfu-fra/heartbeat", token: "secret-of-sfu-fra-0123", body: Array(#"{"load":0}"#.utf8)).status
        }
        let body = #"{"id":"sfu-fra","url":"wss://sfu-fra.example.net/ws","region":"fra","capacity":100,"secret":"secret-of-sfu-fra-0123"}"#
        XCTAssertEqual(try daemon.admin("POST", "/v1/sfus", token: TestDaemon.callAdminToken, body: Array(body.utf8)).status, 201)
        XCTAssertEqual(try heartbeat(), 200)
        let alice = try daemon.callClient("alice")
        let joined = try alice.request("call.join", ["type": "default", "id": "m1", "create": true, "location": ["region": "fra"]])
        XCTAssertEqual(jsonAt(joined, "sfu", "id") as? String, "sfu-fra")
        XCTAssertEqual(jsonAt(joined, "call", "sfu", "id") as? String, "sfu-fra")

        try daemon.restart()
        XCTAssertEqual(try heartbeat(), 200)
        let back = try CallTestClient.connect(daemon, token: try daemon.mintToken(user: "alice"), name: "alice back", resume: (alice.resumeToken, alice.lastSeq))
        XCTAssertEqual(back.ok["resumed"] as? Bool, true)
        let state = try back.request("call.get", ["type": "default", "id": "m1"])
        XCTAssertEqual(jsonAt(state, "call", "sfu", "id") as? String, "sfu-fra", "the call's SFU is part of its state after a restart")
        XCTAssertEqual(jsonAt(try daemon.storedCall("default", "m1"), "sfu", "id") as? String, "sfu-fra")
        let bob = try daemon.callClient("bob")
        XCTAssertEqual(jsonAt(try bob.request("call.join", ["type": "default", "id": "m1"]), "sfu", "id") as? String, "sfu-fra")
    }
}
