import Configuration
import Foundation
import SwitchboardTesting
import XCTest

/// Server-owned ringing on the real daemon: timeouts, the caller cancelling or leaving, busy
/// callees, joining as an answer, and what a token's `call_cids` and `role` allow.
final class CallRingingTests: XCTestCase {
    private func ringing(_ id: String, _ extra: [String: Any] = [:]) -> [String: Any] {
        ["type": "ringing", "id": id].merging(extra) { _, new in new }
    }

    func test_aCalleeWhoDoesNotAnswerIsMissedAndARingNobodyAcceptedEndsWithNoAnswer() throws {
        let daemon = try TestDaemon.calls(["call_types.ringing.incoming_timeout_ms": .int(2000)], wallClock: ManualWallClock())
        let alice = try daemon.callClient("alice")
        let carol = try daemon.callClient("carol")
        let dave = try daemon.callClient("dave")
        try alice.request("call.get_or_create", ringing("t1", ["members": ["bob", "carol"], "ring": true]))
        try dave.request("call.get_or_create", ringing("t2", ["members": ["erin"], "ring": true]))
        // Devices that connect while their user is being rung are rung at once.
        let bob = try daemon.callClient("bob")
        let erin = try daemon.callClient("erin")
        XCTAssertEqual(try bob.event("call.ring")["call_cid"] as? String, "ringing:t1")
        XCTAssertEqual(try erin.event("call.ring")["call_cid"] as? String, "ringing:t2")
        try carol.event("call.ring")
        try carol.request("call.accept", ringing("t1"))
        try alice.event("call.accepted")

        // Just before the ring timeout nobody's ring stops.
        daemon.advance(by: .milliseconds(1999))
        XCTAssertFalse(try bob.pendingTypes().contains("call.ring_stopped"), "bob's ring stopped before the timeout")
        XCTAssertFalse(try dave.pendingTypes().contains("call.missed"), "t2 missed before the timeout")

        // t1: bob times out, carol accepted, so the call goes on.
        daemon.advance(by: .milliseconds(2))
        let bobStopped = try bob.event("call.ring_stopped")
        XCTAssertEqual(jsonAt(bobStopped, "data", "reason") as? String, "timeout")
        // t2: nobody accepted: the caller gets call.missed and the call ends.
        XCTAssertEqual(jsonAt(try erin.event("call.ring_stopped"), "data", "reason") as? String, "timeout")
        XCTAssertEqual(try dave.event("call.missed")["call_cid"] as? String, "ringing:t2")
        XCTAssertEqual(jsonAt(try dave.event("call.ended"), "data", "reason") as? String, "no_answer")
        XCTAssertEqual(try erin.pendingTypes(), [])

        let t1 = try alice.request("call.get", ringing("t1"))
        XCTAssertTrue(jsonAt(t1, "call", "ended_at") is NSNull, "carol accepted: the call goes on")
        XCTAssertEqual(memberStates(t1), ["alice:none", "bob:missed", "carol:accepted"])
        XCTAssertEqual(try alice.pendingTypes(), [], "a call someone accepted is not missed")
        XCTAssertEqual(memberStates(try daemon.storedCall("ringing", "t2")), ["dave:none", "erin:missed"])
        XCTAssertEqual(jsonAt(try daemon.storedCall("ringing", "t2"), "call", "ended_reason") as? String, "no_answer")
    }

    func test_theCallerCancellingOrLeavingStopsTheRingAndTheInitiatorLeavingEndsTheCall() throws {
        let daemon = try TestDaemon.calls()
        let alice = try daemon.callClient("alice")
        let bob = try daemon.callClient("bob")

        // Cancelled before anyone answered.
        try alice.request("call.get_or_create", ringing("k1", ["members": ["bob"], "ring": true]))
        try bob.event("call.ring")
        let cancelled = try alice.request("call.reject", ringing("k1", ["reason": "cancel"]))
        XCTAssertEqual(jsonAt(cancelled, "call", "ended_reason") as? String, "cancelled")
        XCTAssertEqual(memberStates(cancelled), ["alice:none", "bob:rejected:cancel"])
        XCTAssertEqual(jsonAt(try bob.event("call.ring_stopped"), "data", "reason") as? String, "cancelled")
        XCTAssertEqual(jsonAt(try alice.event("call.ended"), "data", "reason") as? String, "cancelled")
        XCTAssertEqual(try bob.pendingTypes(), [])

        // The caller in the call leaves while bob is still being rung.
        let joined = try alice.request("call.join", ringing("k2", ["create": true, "ring": true, "members": ["bob"]]))
        XCTAssertEqual(joined["role"] as? String, "initiator")
        try bob.event("call.ring")
        try alice.request("call.leave", ringing("k2"))
        XCTAssertEqual(jsonAt(try bob.event("call.ring_stopped"), "data", "reason") as? String, "cancelled")
        XCTAssertEqual(jsonAt(try alice.event("call.ended"), "data", "reason") as? String, "initiator_left")
        XCTAssertEqual(try bob.pendingTypes(), [])

        // The initiator leaving an answered call ends it for the others.
        try alice.request("call.join", ringing("k3", ["create": true, "ring": true, "members": ["bob"]]))
        try bob.event("call.ring")
        try bob.request("call.accept", ringing("k3"))
        try bob.request("call.join", ringing("k3"))
        try alice.request("call.leave", ringing("k3"))
        XCTAssertEqual(jsonAt(try bob.event("call.participant_left"), "data", "participant", "user_id") as? String, "alice")
        XCTAssertEqual(jsonAt(try bob.event("call.ended"), "data", "reason") as? String, "initiator_left")
        XCTAssertEqual(jsonAt(try daemon.storedCall("ringing", "k3"), "call", "ended_reason") as? String, "initiator_left")
    }

    func test_aCalleeAlreadyInAnotherCallIsRejectedAsBusy() throws {
        let daemon = try TestDaemon.calls()
        let alice = try daemon.callClient("alice")
        let bob = try daemon.callClient("bob")
        try bob.request("call.join", ["type": "default", "id": "standup", "create": true])

        let created = try alice.request("call.get_or_create", ringing("b1", ["members": ["bob"], "ring": true]))
        XCTAssertEqual(memberStates(created), ["alice:none", "bob:rejected:busy"])
        XCTAssertEqual(jsonAt(created, "call", "ended_reason") as? String, "all_rejected")
        let rejected = try alice.event("call.rejected")
        XCTAssertEqual(jsonAt(rejected, "data", "reason") as? String, "busy")
        XCTAssertEqual(jsonAt(try alice.event("call.ended"), "data", "reason") as? String, "all_rejected")
        XCTAssertEqual(try bob.pendingTypes(), [], "a busy callee is not rung, and not bothered with the refusal")
    }

    func test_joiningWhileBeingRungAnswersTheRing() throws {
        let daemon = try TestDaemon.calls()
        let alice = try daemon.callClient("alice")
        let bob1 = try daemon.callClient("bob", name: "bob1")
        let bob2 = try daemon.callClient("bob", name: "bob2")
        try alice.request("call.get_or_create", ringing("j1", ["members": ["bob"], "ring": true]))
        try bob1.event("call.ring")
        try bob2.event("call.ring")
        let joined = try bob2.request("call.join", ringing("j1"))
        XCTAssertEqual(joined["role"] as? String, "participant")
        XCTAssertEqual(memberStates(joined), ["alice:none", "bob:accepted"])
        XCTAssertEqual(jsonAt(try alice.event("call.accepted"), "data", "user_id") as? String, "bob")
        XCTAssertEqual(jsonAt(try bob1.event("call.ring_stopped"), "data", "reason") as? String, "accepted_elsewhere")
        XCTAssertEqual(try bob2.pendingTypes(), [])
    }

    func test_aTokensCallCIDsLimitWhatItTouchesAndAnAdminRoleMayEndAnyCall() throws {
        let daemon = try TestDaemon.calls()
        let alice = try daemon.callClient("alice")
        let ben = try daemon.callClient("ben")
        let scoped = try CallTestClient.connect(daemon, token: try daemon.mintToken(user: "sam", callCIDs: ["default:m1"]), name: "sam")
        let otherSession = try XCTUnwrap(try ben.request("call.join", ["type": "default", "id": "m2", "create": true])["session_id"] as? String)
        try alice.request("call.join", ["type": "default", "id": "m1", "create": true])

        XCTAssertEqual(try scoped.requestError("call.join", ["type": "default", "id": "m2"]), "forbidden")
        XCTAssertEqual(try scoped.requestError("call.get_or_create", ["type": "default", "id": "m3"]), "forbidden")
        XCTAssertEqual(try daemon.admin("GET", "/v1/calls/default/m3", token: TestDaemon.callAdminToken).status, 404, "nothing was created")
        try scoped.request("call.join", ["type": "default", "id": "m1"])
        XCTAssertEqual(try scoped.requestError("signal.send", ["to_session": otherSession, "kind": "offer", "payload": ["sdp": "x"]]), "forbidden")

        // Only the initiator, or a token with role admin, ends a call.
        XCTAssertEqual(try ben.requestError("call.end", ["type": "default", "id": "m1"]), "forbidden")
        let admin = try CallTestClient.connect(daemon, token: try daemon.mintToken(user: "ops", role: "admin"), name: "ops")
        try alice.request("call.get_or_create", ringing("private", ["members": ["bob"]]))
        XCTAssertEqual(jsonAt(try admin.request("call.get", ringing("private")), "call", "cid") as? String, "ringing:private", "admins see members-only calls")
        let ended = try admin.request("call.end", ["type": "default", "id": "m1"])
        XCTAssertEqual(jsonAt(ended, "call", "ended_reason") as? String, "ended_by_user")
        for client in [alice, scoped] {
            XCTAssertEqual(jsonAt(try client.event("call.ended"), "data", "reason") as? String, "ended_by_user", client.name)
        }
    }

    func test_aCallWithoutParticipantsEndsEmptyAfterTheEmptyTimeoutUnlessSomeoneJoins() throws {
        let daemon = try TestDaemon.calls(["call_types.default.empty_timeout_ms": .int(1000)], wallClock: ManualWallClock())
        let ann = try daemon.callClient("ann")
        let ben = try daemon.callClient("ben")
        try ann.request("call.get_or_create", ["type": "default", "id": "never-joined"])
        try ann.request("call.get_or_create", ["type": "default", "id": "joined"])
        try ben.request("call.join", ["type": "default", "id": "joined"])
        try ann.request("call.join", ["type": "default", "id": "left", "create": true])
        try ann.request("call.leave", ["type": "default", "id": "left"])

        daemon.advance(by: .milliseconds(999))
        XCTAssertFalse(try ann.pendingTypes().contains("call.ended"), "ended before the empty timeout")
        daemon.advance(by: .milliseconds(2))
        var ended: [String] = []
        for _ in 0..<2 {
            let event = try ann.event("call.ended")
            XCTAssertEqual(jsonAt(event, "data", "reason") as? String, "empty")
            ended.append(event["call_cid"] as? String ?? "")
        }
        XCTAssertEqual(ended.sorted(), ["default:left", "default:never-joined"])
        XCTAssertTrue(jsonAt(try ben.request("call.get", ["type": "default", "id": "joined"]), "call", "ended_at") is NSNull)
        XCTAssertEqual(try ben.pendingTypes(), [])
    }
}
