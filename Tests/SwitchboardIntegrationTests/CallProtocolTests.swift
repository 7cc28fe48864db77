import Foundation
import SwitchboardTesting
import XCTest

/// The call protocol (`/v1/connect`) end to end on the real daemon: ringing calls across a
/// user's devices, a meeting with media state, custom events and signaling, and request
/// errors. Every client checks that its events are numbered 1, 2, 3… without a gap.
final class CallProtocolTests: XCTestCase {
    private let ringing: (String) -> [String: Any] = { ["type": "ringing", "id": $0] }
    private let meeting: (String) -> [String: Any] = { ["type": "default", "id": $0] }

    private func with(_ base: [String: Any], _ extra: [String: Any]) -> [String: Any] {
        base.merging(extra) { _, new in new }
    }

    // MARK: - Ringing

    func test_aRingReachesEveryDeviceOfTheCalleeIsAcceptedOnOneAndTheHangUpReachesEveryoneInTheCall() throws {
        let daemon = try TestDaemon.calls()
        let alice = try daemon.callClient("alice")
        let bob1 = try daemon.callClient("bob", name: "bob1")
        let bob2 = try daemon.callClient("bob", name: "bob2")
        XCTAssertNotEqual(bob1.connectionID, bob2.connectionID)
        XCTAssertEqual([alice.userID, bob1.userID, bob2.userID], ["alice", "bob", "bob"])

        let created = try alice.request("call.get_or_create", with(ringing("c1"), ["members": ["bob"], "ring": true]))
        XCTAssertEqual(created["created"] as? Bool, true)
        XCTAssertEqual(jsonAt(created, "call", "cid") as? String, "ringing:c1")
        XCTAssertEqual(jsonAt(created, "call", "created_by") as? String, "alice")
        XCTAssertEqual(jsonAt(created, "call", "ringing") as? Bool, true)
        XCTAssertEqual(memberStates(created), ["alice:none", "bob:ringing"])
        XCTAssertEqual(participantUsers(created), [])

        for bob in [bob1, bob2] {
            let ring = try bob.event("call.ring")
            XCTAssertEqual(ring["call_cid"] as? String, "ringing:c1")
            XCTAssertEqual(jsonAt(ring, "data", "from") as? String, "alice")
            XCTAssertEqual(jsonAt(ring, "data", "call", "cid") as? String, "ringing:c1")
            XCTAssertEqual(memberStates(jsonObject(jsonAt(ring, "data"))), ["alice:none", "bob:ringing"])
            // The default incoming timeout is 30 s.
            let deadline = try XCTUnwrap(jsonInt(jsonAt(ring, "data", "ring_deadline")))
            XCTAssertGreaterThan(deadline, milliseconds() + 25_000)
            XCTAssertLessThanOrEqual(deadline, milliseconds() + 30_000)
        }
        XCTAssertEqual(try alice.pendingTypes(), [], "the caller is not rung")

        // Device 1 accepts. The answer comes after the commit: the store already says so.
        let accepted = try bob1.request("call.accept", ringing("c1"))
        XCTAssertEqual(memberStates(accepted), ["alice:none", "bob:accepted"])
        XCTAssertEqual(memberStates(try daemon.storedCall("ringing", "c1")), ["alice:none", "bob:accepted"])
        let acceptedEvent = try alice.event("call.accepted")
        XCTAssertEqual(acceptedEvent["call_cid"] as? String, "ringing:c1")
        XCTAssertEqual(jsonAt(acceptedEvent, "data", "user_id") as? String, "bob")
        XCTAssertEqual(jsonAt(acceptedEvent, "data", "call", "ringing") as? Bool, false)
        let stopped = try bob2.event("call.ring_stopped")
        XCTAssertEqual(jsonAt(stopped, "data", "reason") as? String, "accepted_elsewhere")
        XCTAssertEqual(try bob1.pendingTypes(), [], "the device that accepted is not told to stop ringing")
        XCTAssertEqual(try bob2.requestError("call.accept", ringing("c1")), "conflict", "the ring is over")

        // Bob joins from the device that accepted, then alice.
        let bobJoin = try bob1.request("call.join", ringing("c1"))
        let bobSession = try XCTUnwrap(bobJoin["session_id"] as? String)
        XCTAssertEqual(bobJoin["role"] as? String, "participant")
        XCTAssertEqual(participantUsers(bobJoin), ["bob"])
        XCTAssertTrue(bobJoin["sfu"] is NSNull, "no SFU is registered: the call is peer to peer")
        let aliceJoin = try alice.request("call.join", ringing("c1"))
        let aliceSession = try XCTUnwrap(aliceJoin["session_id"] as? String)
        XCTAssertEqual(aliceJoin["role"] as? String, "initiator")
        XCTAssertEqual(participantUsers(aliceJoin), ["alice", "bob"])
        XCTAssertEqual(participantSessions(aliceJoin), [aliceSession, bobSession])
        let joined = try bob1.event("call.participant_joined")
        XCTAssertEqual(jsonAt(joined, "data", "participant", "session_id") as? String, aliceSession)
        XCTAssertEqual(jsonAt(joined, "data", "participant", "role") as? String, "initiator")

        // A participant leaving never ends the call.
        let left = try bob1.request("call.leave", ringing("c1"))
        XCTAssertEqual(left["left"] as? [String], [bobSession])
        let leftEvent = try alice.event("call.participant_left")
        XCTAssertEqual(jsonAt(leftEvent, "data", "participant", "session_id") as? String, bobSession)
        XCTAssertEqual(jsonAt(leftEvent, "data", "participant", "reason") as? String, "left")
        let afterLeave = try alice.request("call.get", ringing("c1"))
        XCTAssertTrue(jsonAt(afterLeave, "call", "ended_at") is NSNull, "a participant leaving never ends the call")
        XCTAssertEqual(participantSessions(afterLeave), [aliceSession])

        // Bob comes back as a new session; alice hangs up.
        let rejoin = try bob1.request("call.join", ringing("c1"))
        let bobSecondSession = try XCTUnwrap(rejoin["session_id"] as? String)
        XCTAssertNotEqual(bobSecondSession, bobSession)
        XCTAssertEqual(participantUsers(rejoin), ["alice", "bob"])
        XCTAssertEqual(jsonAt(try alice.event("call.participant_joined"), "data", "participant", "session_id") as? String, bobSecondSession)

        let ended = try alice.request("call.end", ringing("c1"))
        XCTAssertEqual(jsonAt(ended, "call", "ended_reason") as? String, "ended_by_user")
        XCTAssertEqual(participantUsers(ended), [])
        for client in [alice, bob1] {
            let event = try client.event("call.ended")
            XCTAssertEqual(event["call_cid"] as? String, "ringing:c1", client.name)
            XCTAssertEqual(jsonAt(event, "data", "reason") as? String, "ended_by_user", client.name)
            XCTAssertEqual(jsonAt(event, "data", "call", "ended_reason") as? String, "ended_by_user", client.name)
        }
        XCTAssertEqual(try alice.pendingTypes(), [], "one call.ended per connection")
        XCTAssertEqual(try bob1.pendingTypes(), [])
        XCTAssertEqual(try bob2.pendingTypes(), [], "a device that stopped ringing and never joined is not in the call")

        let stored = try daemon.storedCall("ringing", "c1")
        XCTAssertEqual(jsonAt(stored, "call", "live") as? Bool, false)
        XCTAssertEqual(jsonAt(stored, "call", "ended_reason") as? String, "ended_by_user")
        XCTAssertEqual(jsonAt(stored, "call", "rung") as? Bool, true)
        XCTAssertEqual(
            jsonObjects(stored["sessions"]).map { "\($0["session_id"] as? String ?? ""):\($0["left_reason"] as? String ?? "-")" }.sorted(),
            ["\(aliceSession):call_ended", "\(bobSession):left", "\(bobSecondSession):call_ended"].sorted())
        XCTAssertEqual(
            jsonObjects(stored["events"]).compactMap { $0["type"] as? String },
            [
                "call.created", "call.ring", "call.accepted", "call.session_started", "call.participant_joined", "call.participant_joined",
                "call.participant_left", "call.participant_joined", "call.participant_left", "call.participant_left", "call.session_ended",
                "call.ended",
            ])

        // Joining again reopens the call as its second session; nobody is rung again.
        let reopened = try alice.request("call.join", ringing("c1"))
        XCTAssertEqual(jsonInt(jsonAt(reopened, "call", "session")), 2)
        XCTAssertTrue(jsonAt(reopened, "call", "ended_at") is NSNull)
        XCTAssertEqual(jsonAt(reopened, "call", "ringing") as? Bool, false)
        XCTAssertEqual(try bob1.pendingTypes(), [], "ringing happens only the first time a call id is used")
        XCTAssertEqual(try bob2.pendingTypes(), [])
    }

    func test_aRejectReachesTheCallerAndTheCalleesOtherDeviceAndTheCallEndsWhenEveryCalleeRejected() throws {
        let daemon = try TestDaemon.calls()
        let alice = try daemon.callClient("alice")
        let bob1 = try daemon.callClient("bob", name: "bob1")
        let bob2 = try daemon.callClient("bob", name: "bob2")
        let carol = try daemon.callClient("carol")
        try alice.request("call.get_or_create", with(ringing("c2"), ["members": ["bob", "carol"], "ring": true]))
        for client in [bob1, bob2, carol] { XCTAssertEqual(try client.event("call.ring")["call_cid"] as? String, "ringing:c2", client.name) }

        let afterBob = try bob1.request("call.reject", with(ringing("c2"), ["reason": "decline"]))
        XCTAssertEqual(memberStates(afterBob), ["alice:none", "bob:rejected:decline", "carol:ringing"])
        XCTAssertTrue(jsonAt(afterBob, "call", "ended_at") is NSNull, "carol is still being rung")
        for client in [alice, bob2] {
            let rejected = try client.event("call.rejected")
            XCTAssertEqual(jsonAt(rejected, "data", "user_id") as? String, "bob", client.name)
            XCTAssertEqual(jsonAt(rejected, "data", "reason") as? String, "decline", client.name)
        }
        XCTAssertEqual(try bob1.pendingTypes(), [], "the rejecting device is not told")
        XCTAssertEqual(try carol.pendingTypes(), [], "another callee is not told")

        let afterCarol = try carol.request("call.reject", with(ringing("c2"), ["reason": "busy"]))
        XCTAssertEqual(jsonAt(afterCarol, "call", "ended_reason") as? String, "all_rejected")
        XCTAssertEqual(memberStates(afterCarol), ["alice:none", "bob:rejected:decline", "carol:rejected:busy"])
        let rejected = try alice.event("call.rejected")
        XCTAssertEqual(jsonAt(rejected, "data", "user_id") as? String, "carol")
        XCTAssertEqual(jsonAt(rejected, "data", "reason") as? String, "busy")
        let ended = try alice.event("call.ended")
        XCTAssertEqual(jsonAt(ended, "data", "reason") as? String, "all_rejected")
        XCTAssertEqual(try alice.pendingTypes(), [])
        XCTAssertEqual(try bob1.pendingTypes(), [])
        XCTAssertEqual(try bob2.pendingTypes(), [])

        let stored = try daemon.storedCall("ringing", "c2")
        XCTAssertEqual(jsonAt(stored, "call", "ended_reason") as? String, "all_rejected")
        XCTAssertEqual(memberStates(stored), ["alice:none", "bob:rejected:decline", "carol:rejected:busy"])
        XCTAssertEqual(try bob2.requestError("call.accept", ringing("c2")), "call_ended")
    }

    // MARK: - Meetings

    func test_aMeetingOfFourOrdersParticipantsSharesMediaStateAndEventsAndRelaysSignalsOnlyWithinTheCall() throws {
        let daemon = try TestDaemon.calls()
        let names = ["ann", "ben", "cat", "dan"]
        let clients = try names.map { try daemon.callClient($0) }
        let (ann, ben, cat, dan) = (clients[0], clients[1], clients[2], clients[3])
        var sessions: [String: String] = [:]
        for (index, client) in clients.enumerated() {
            let joined = try client.request("call.join", with(meeting("m1"), ["create": true]))
            sessions[client.name] = try XCTUnwrap(joined["session_id"] as? String)
            XCTAssertEqual(joined["role"] as? String, index == 0 ? "initiator" : "participant", client.name)
            XCTAssertEqual(participantUsers(joined), Array(names.prefix(index + 1)), client.name)
            XCTAssertEqual(jsonAt(joined, "call", "created_by") as? String, "ann")
            for earlier in clients.prefix(index) {
                let event = try earlier.event("call.participant_joined")
                XCTAssertEqual(event["call_cid"] as? String, "default:m1")
                XCTAssertEqual(jsonAt(event, "data", "participant", "user_id") as? String, client.name, earlier.name)
                XCTAssertEqual(jsonAt(event, "data", "participant", "session_id") as? String, sessions[client.name], earlier.name)
            }
        }
        for client in clients { XCTAssertEqual(try client.pendingTypes(), [], "\(client.name) got no event about its own join") }

        // Cat turns video on and is pinned: everyone, cat included, hears it.
        let catState = try cat.request("call.update_participant", with(meeting("m1"), ["video": true, "pinned": true]))
        XCTAssertEqual(catState["session_id"] as? String, sessions["cat"])
        XCTAssertEqual([catState["video"], catState["pinned"], catState["audio"]].map { $0 as? Bool }, [true, true, false])
        for client in clients {
            let event = try client.event("call.participant_updated")
            XCTAssertEqual(jsonAt(event, "data", "participant", "session_id") as? String, sessions["cat"], client.name)
            XCTAssertEqual(jsonAt(event, "data", "participant", "video") as? Bool, true, client.name)
            XCTAssertEqual(jsonAt(event, "data", "participant", "pinned") as? Bool, true, client.name)
        }
        try ben.request("call.update_participant", with(meeting("m1"), ["screenshare": true]))
        try dan.request("call.update_participant", with(meeting("m1"), ["audio": true]))
        for client in clients {
            XCTAssertEqual(jsonAt(try client.event("call.participant_updated"), "data", "participant", "user_id") as? String, "ben")
            XCTAssertEqual(jsonAt(try client.event("call.participant_updated"), "data", "participant", "user_id") as? String, "dan")
        }
        // Ann speaks: she becomes the dominant speaker.
        let annState = try ann.request("call.update_participant", with(meeting("m1"), ["audio": true, "speaking": true, "audio_level": 0.6]))
        XCTAssertEqual(annState["dominant_speaker"] as? Bool, true)
        for client in clients {
            let changed = try client.event("call.dominant_speaker_changed")
            XCTAssertEqual(jsonAt(changed, "data", "session_id") as? String, sessions["ann"], client.name)
            XCTAssertEqual(jsonAt(changed, "data", "user_id") as? String, "ann", client.name)
            let updated = try client.event("call.participant_updated")
            XCTAssertEqual(jsonAt(updated, "data", "participant", "speaking") as? Bool, true, client.name)
        }
        // Pinned, screensharing, dominant speaker, publishing audio.
        let state = try dan.request("call.get", meeting("m1"))
        XCTAssertEqual(participantUsers(state), ["cat", "ben", "ann", "dan"])
        XCTAssertEqual(jsonAt(state, "call", "dominant_speaker") as? String, sessions["ann"])

        // A custom event goes to everyone in the call, the sender included.
        try ben.request("call.send_event", with(meeting("m1"), ["custom": ["reaction": "raised-hand"]]))
        for client in clients {
            let custom = try client.event("call.custom")
            XCTAssertEqual(jsonAt(custom, "data", "user_id") as? String, "ben", client.name)
            XCTAssertEqual(jsonAt(custom, "data", "custom", "reaction") as? String, "raised-hand", client.name)
        }

        // An offer from ann's session reaches ben's session only, stamped by the server.
        let offer: [String: Any] = ["type": "offer", "sdp": "v=0\r\no=- 46117 2 IN IP4 127.0.0.1\r\ns=-\r\n"]
        let delivered = try ann.request("signal.send", ["to_session": sessions["ben"]!, "kind": "offer", "payload": offer])
        XCTAssertEqual(delivered["delivered_to"] as? String, sessions["ben"])
        let signal = try ben.event("signal")
        XCTAssertEqual(signal["call_cid"] as? String, "default:m1")
        XCTAssertEqual(jsonAt(signal, "data", "from_session") as? String, sessions["ann"])
        XCTAssertEqual(jsonAt(signal, "data", "from_user") as? String, "ann")
        XCTAssertEqual(jsonAt(signal, "data", "to_session") as? String, sessions["ben"])
        XCTAssertEqual(jsonAt(signal, "data", "kind") as? String, "offer")
        XCTAssertEqual(jsonAt(signal, "data", "payload", "sdp") as? String, offer["sdp"] as? String)
        for client in [ann, cat, dan] { XCTAssertFalse(try client.pendingTypes().contains("signal"), "\(client.name) got ben's signal") }
        // Ann cannot sign as another session.
        XCTAssertEqual(
            try ann.requestError(
                "signal.send", ["session_id": sessions["cat"]!, "to_session": sessions["ben"]!, "kind": "candidate", "payload": ["candidate": "c"]]),
            "forbidden")

        // A session of another call is out of reach, both ways.
        let eve = try daemon.callClient("eve")
        let eveSession = try XCTUnwrap(try eve.request("call.join", with(meeting("m2"), ["create": true]))["session_id"] as? String)
        XCTAssertEqual(try ann.requestError("signal.send", ["to_session": eveSession, "kind": "offer", "payload": offer]), "forbidden")
        XCTAssertEqual(try eve.requestError("signal.send", ["to_session": sessions["ann"]!, "kind": "answer", "payload": offer]), "forbidden")
        XCTAssertEqual(try eve.requestError("call.send_event", with(meeting("m1"), ["custom": ["x": 1]])), "not_a_member")
        XCTAssertFalse(try eve.pendingTypes().contains("signal"))
        for client in clients { XCTAssertEqual(try client.pendingTypes(), [], "\(client.name) heard from another call") }
    }

    // MARK: - Errors

    func test_aFullCallAMembersOnlyCallAnUnknownCallAndABadFrameHaveStableCodesAndTheDaemonKeepsServing() throws {
        let daemon = try TestDaemon.calls(["call_types.default.max_participants": .int(2), "calls.max_custom_bytes": .int(64)])
        let ann = try daemon.callClient("ann")
        let ben = try daemon.callClient("ben")
        let cat = try daemon.callClient("cat")
        try ann.request("call.join", with(meeting("m1"), ["create": true]))
        try ben.request("call.join", meeting("m1"))
        XCTAssertEqual(try cat.requestError("call.join", meeting("m1")), "call_full")
        XCTAssertEqual(participantUsers(try ann.request("call.get", meeting("m1"))), ["ann", "ben"])
        XCTAssertEqual(jsonInt(try ann.event("call.participant_joined")["seq"]), 1)
        XCTAssertEqual(try ann.pendingTypes(), [], "a refused join is not announced")
        try ben.request("call.leave", meeting("m1"))
        XCTAssertEqual(participantUsers(try cat.request("call.join", meeting("m1"))), ["ann", "cat"], "a free place can be taken")

        // Ringing calls are members only.
        let alice = try daemon.callClient("alice")
        let mallory = try daemon.callClient("mallory")
        try alice.request("call.get_or_create", with(ringing("r1"), ["members": ["bob"]]))
        XCTAssertEqual(try mallory.requestError("call.join", ringing("r1")), "not_a_member")
        XCTAssertEqual(try mallory.requestError("call.get", ringing("r1")), "not_a_member")
        XCTAssertEqual(try mallory.requestError("call.get_or_create", ringing("r1")), "not_a_member")
        XCTAssertEqual(participantUsers(try alice.request("call.get", ringing("r1"))), [])
        // Until a member invites them.
        try alice.request("call.invite", with(ringing("r1"), ["members": ["mallory"]]))
        let added = try mallory.event("call.members_added")
        XCTAssertEqual(jsonAt(added, "data", "added") as? [String], ["mallory"])
        XCTAssertEqual(memberStates(jsonObject(added["data"])), ["alice:none", "bob:none", "mallory:none"])
        XCTAssertEqual(try mallory.request("call.join", ringing("r1"))["role"] as? String, "participant")
        XCTAssertEqual(try mallory.requestError("call.end", ringing("r1")), "forbidden", "only the initiator ends a call")

        // Custom payloads are capped (calls.max_custom_bytes).
        let big = String(repeating: "x", count: 80)
        XCTAssertEqual(try mallory.requestError("call.send_event", with(ringing("r1"), ["custom": ["text": big]])), "payload_too_large")
        try mallory.request("call.send_event", with(ringing("r1"), ["custom": ["text": "hi"]]))
        XCTAssertEqual(jsonAt(try mallory.event("call.custom"), "data", "custom", "text") as? String, "hi")

        // A call that does not exist is not created by a join without create.
        XCTAssertEqual(try mallory.requestError("call.join", meeting("nope")), "call_not_found")
        XCTAssertEqual(try mallory.requestError("call.get", meeting("nope")), "call_not_found")
        XCTAssertEqual(try daemon.admin("GET", "/v1/calls/default/nope", token: TestDaemon.callAdminToken).status, 404)

        // Frames that are not requests.
        try mallory.sendText("{not json")
        let notJSON = try mallory.next()
        XCTAssertEqual(notJSON["type"] as? String, "error")
        XCTAssertNil(notJSON["id"], "a frame that is not JSON has no id to answer with")
        XCTAssertEqual(jsonAt(notJSON, "error", "code") as? String, "invalid_request")
        try mallory.sendText(#"{"id":"x1","type":"call.join","data":{"type":"default"}}"#)
        let missingID = try mallory.next()
        XCTAssertEqual(missingID["id"] as? String, "x1")
        XCTAssertEqual(jsonAt(missingID, "error", "code") as? String, "invalid_request")
        XCTAssertEqual(try mallory.requestError("call.fly", meeting("m1")), "unknown_type")
        XCTAssertEqual(try mallory.requestError("call.join", ["type": "nosuchtype", "id": "x", "create": true]), "invalid_request")
        XCTAssertEqual(try mallory.requestError("call.join", ["type": "default", "id": "bad id!", "create": true]), "invalid_request")

        // Requests that need a live call, on an ended one; auth again on an authenticated socket.
        try alice.request("call.end", ringing("r1"))
        for type in ["call.leave", "call.invite", "call.accept", "call.update_participant", "call.send_event", "call.end"] {
            let data = with(ringing("r1"), ["members": ["zed"], "audio": true, "custom": ["x": 1]])
            XCTAssertEqual(try alice.requestError(type, data), "call_ended", type)
        }
        XCTAssertEqual(jsonAt(try alice.request("call.get", ringing("r1")), "call", "ended_reason") as? String, "ended_by_user")
        XCTAssertEqual(try mallory.requestError("auth", ["token": try daemon.mintToken(user: "mallory")]), "invalid_request")
        XCTAssertEqual(try cat.requestError("call.invite", with(ringing("r1"), ["members": ["cat"]])), "call_ended")

        // The socket and the daemon still serve.
        try mallory.ping()
        let state = try ann.request("call.get", meeting("m1"))
        XCTAssertEqual(participantUsers(state), ["ann", "cat"])
        XCTAssertEqual(try daemon.connectionList().count, 5)
    }
}
