import Configuration
import Foundation
import SwitchboardTesting
import XCTest

/// Finer points of the call protocol's contract (docs/protocol.md, section 6) on the real
/// daemon: token claims, refresh, replay edge cases, ringing that stops when a call ends,
/// ring rate limits, ended calls read back from the store, dominant speaker hysteresis, the
/// admin API's call actions and draining.
final class CallContractTests: XCTestCase {
    private let secret = TestDaemon.callSecret
    private let m1: [String: Any] = ["type": "default", "id": "m1"]

    private func m1(_ extra: [String: Any]) -> [String: Any] { m1.merging(extra) { _, new in new } }

    private func ringing(_ id: String, _ extra: [String: Any] = [:]) -> [String: Any] {
        ["type": "ringing", "id": id].merging(extra) { _, new in new }
    }

    /// Opens a socket, sends an auth frame with `token`, and returns the error code it got
    /// before its 4001 close, or `"ok"` when it was accepted.
    private func authOutcome(_ daemon: TestDaemon, _ token: String, _ label: String, file: StaticString = #filePath, line: UInt = #line) throws -> String {
        let client = try CallTestClient.open(daemon, name: label)
        try client.send(["type": "auth", "token": token])
        let first = try client.next()
        if first["type"] as? String == "connection.ok" { return "ok" }
        XCTAssertEqual(try client.awaitClose().code, 4001, label, file: file, line: line)
        return jsonAt(first, "error", "code") as? String ?? "?"
    }

    // MARK: - Tokens (6.1, 6.2, 6.10)

    func test_tokenClaimsAreCheckedAsDocumented() throws {
        let daemon = try TestDaemon.calls()
        let now = Date()
        let seconds = Int(now.timeIntervalSince1970)
        let base = TestJWT.claims(user: "zoe", expiresAt: now + 600)
        // "the kid is not checked: any HS256 token with a valid signature passes"
        XCTAssertEqual(try authOutcome(daemon, TestJWT.make(base, secret: secret, kid: "another-key"), "other kid"), "ok")
        XCTAssertEqual(try authOutcome(daemon, TestJWT.make(base, secret: secret, kid: nil), "no kid"), "ok")
        // `sub` names the user when `user_id` is absent.
        XCTAssertEqual(try authOutcome(daemon, TestJWT.make(["sub": "sue", "iat": seconds, "exp": seconds + 600], secret: secret), "sub only"), "ok")
        let cases: [(String, [String: Any], String)] = [
            ("user id over 128 bytes", TestJWT.claims(user: String(repeating: "u", count: 129), expiresAt: now + 600), "token_invalid"),
            ("control character in the user id", TestJWT.claims(user: "zo\u{1}e", expiresAt: now + 600), "token_invalid"),
            ("nbf a minute ahead", base.merging(["nbf": seconds + 60]) { _, new in new }, "token_invalid"),
            ("iat a minute ahead", base.merging(["iat": seconds + 60]) { _, new in new }, "token_invalid"),
            ("nbf within the leeway", base.merging(["nbf": seconds + 2]) { _, new in new }, "ok"),
        ]
        for (label, claims, expected) in cases {
            XCTAssertEqual(try authOutcome(daemon, TestJWT.make(claims, secret: secret), label), expected, label)
        }
    }

    func test_aRefreshReplacesTheTokensCallCIDsAndRole() throws {
        let daemon = try TestDaemon.calls()
        let alice = try daemon.callClient("alice")
        try alice.request("call.join", m1(["create": true]))
        let sam = try CallTestClient.connect(daemon, token: try daemon.mintToken(user: "sam", callCIDs: ["default:m2"]), name: "sam")
        XCTAssertEqual(try sam.requestError("call.get", m1), "forbidden")
        XCTAssertEqual(try sam.requestError("call.end", m1), "forbidden")

        try sam.request("token.refresh", ["token": try daemon.mintToken(user: "sam")])
        XCTAssertEqual(participantUsers(try sam.request("call.get", m1)), ["alice"], "the new token has no call_cids")
        XCTAssertEqual(try sam.requestError("call.end", m1), "forbidden")

        try sam.request("token.refresh", ["token": try daemon.mintToken(user: "sam", role: "admin")])
        XCTAssertEqual(jsonAt(try sam.request("call.end", m1), "call", "ended_reason") as? String, "ended_by_user", "the new token is an admin's")
        XCTAssertEqual(jsonAt(try alice.event("call.ended"), "data", "reason") as? String, "ended_by_user")

        try sam.request("token.refresh", ["token": try daemon.mintToken(user: "sam", callCIDs: ["default:m2"])])
        XCTAssertEqual(try sam.requestError("call.get", m1), "forbidden", "and back to a scoped one")
    }

    // MARK: - Resume edge cases (6.11)

    func test_anIncompleteReplayIsFollowedByTheRingsStillGoing() throws {
        let daemon = try TestDaemon.calls(["connect.replay_buffer": .int(1)])
        let alice = try daemon.callClient("alice")
        let bob = try daemon.callClient("bob")
        try alice.request("call.get_or_create", ringing("r1", ["members": ["bob"], "ring": true]))
        XCTAssertEqual(jsonInt(try bob.event("call.ring")["seq"]), 1)
        bob.drop()
        try waitUntil("bob is detached") { try daemon.connectionList().first { $0["user_id"] as? String == "bob" }?["attached"] as? Bool == false }
        try alice.request("call.join", m1(["create": true]))
        try alice.request("call.invite", m1(["members": ["bob"]]))
        try alice.request("call.join", ["type": "default", "id": "m2", "create": true])
        try alice.request("call.invite", ["type": "default", "id": "m2", "members": ["bob"]])

        let back = try CallTestClient.connect(daemon, token: try daemon.mintToken(user: "bob"), name: "bob back", resume: (bob.resumeToken, 1))
        XCTAssertEqual(back.ok["resumed"] as? Bool, true)
        XCTAssertEqual(back.ok["replay_complete"] as? Bool, false, "one of the two missed events fell out of the buffer")
        XCTAssertEqual(jsonInt(back.ok["replayed"]), 1)
        let replayed = try back.next()
        XCTAssertEqual(replayed["type"] as? String, "call.members_added")
        XCTAssertEqual(replayed["call_cid"] as? String, "default:m2")
        XCTAssertEqual(jsonInt(replayed["seq"]), 3)
        let ringAgain = try back.next()
        XCTAssertEqual(ringAgain["type"] as? String, "call.ring", "a resume with an incomplete replay is rung again")
        XCTAssertEqual(ringAgain["call_cid"] as? String, "ringing:r1")
        XCTAssertEqual(jsonInt(ringAgain["seq"]), 4)
    }

    func test_aResumeWithALastSeqAheadOfTheServerIsIncompleteAndNumberingGoesOnFromIt() throws {
        let daemon = try TestDaemon.calls()
        let bob = try daemon.callClient("bob")
        try bob.request("call.join", m1(["create": true]))
        let back = try CallTestClient.connect(daemon, token: try daemon.mintToken(user: "bob"), name: "bob back", resume: (bob.resumeToken, 50))
        XCTAssertEqual(back.ok["resumed"] as? Bool, true)
        XCTAssertEqual(back.ok["replay_complete"] as? Bool, false)
        XCTAssertEqual(jsonInt(back.ok["last_seq"]), 50)
        XCTAssertEqual(jsonInt(back.ok["replayed"]), 0)
        try back.request("call.send_event", m1(["custom": ["n": 1]]))
        XCTAssertEqual(jsonInt(try back.event("call.custom")["seq"]), 51)
    }

    // MARK: - Ringing and ending (6.6–6.8)

    func test_endingACallWhileACalleeIsStillRungTellsThatCalleeAndCancelsTheirRing() throws {
        let daemon = try TestDaemon.calls()
        let alice = try daemon.callClient("alice")
        let bob = try daemon.callClient("bob")
        let carol = try daemon.callClient("carol")
        try alice.request("call.join", ringing("e1", ["create": true, "ring": true, "members": ["bob", "carol"]]))
        try bob.event("call.ring")
        try carol.event("call.ring")
        try carol.request("call.join", ringing("e1"))
        try alice.event("call.accepted")
        try alice.event("call.participant_joined")

        let ended = try alice.request("call.end", ringing("e1"))
        XCTAssertEqual(memberStates(ended), ["alice:none", "bob:rejected:cancel", "carol:accepted"])
        for client in [alice, bob, carol] {
            XCTAssertEqual(jsonAt(try client.event("call.ended"), "data", "reason") as? String, "ended_by_user", client.name)
        }
        XCTAssertEqual(try bob.pendingTypes(), [])
        XCTAssertEqual(try carol.pendingTypes(), [], "no call.participant_left when a call ends")
    }

    func test_aCalleeRungTooOftenMakesTheCreationFailWithRateLimitedAndNothingIsCreated() throws {
        let daemon = try TestDaemon.calls(["calls.ring_burst": .double(1), "calls.ring_rate_per_minute": .double(0)])
        let alice = try daemon.callClient("alice")
        let bob = try daemon.callClient("bob")
        try alice.request("call.get_or_create", ringing("q1", ["members": ["bob"], "ring": true]))
        try bob.event("call.ring")
        XCTAssertEqual(try alice.requestError("call.get_or_create", ringing("q2", ["members": ["bob", "carol"], "ring": true])), "rate_limited")
        XCTAssertEqual(try daemon.admin("GET", "/v1/calls/ringing/q2", token: TestDaemon.callAdminToken).status, 404)
        XCTAssertEqual(try bob.pendingTypes(), [])
        // Carol was not charged by the failed creation.
        try alice.request("call.get_or_create", ringing("q3", ["members": ["carol"], "ring": true]))
        XCTAssertEqual(jsonAt(try alice.request("call.get", ringing("q3")), "call", "ringing") as? Bool, true)
    }

    func test_anEndedCallReadBackFromTheStoreAfterARestartNeverRingsAgainAndReopensAsItsNextSession() throws {
        let daemon = try TestDaemon.calls(["shutdown.drain_timeout_ms": .int(300)])
        let alice = try daemon.callClient("alice")
        try alice.request("call.get_or_create", ringing("once", ["members": ["bob"], "ring": true]))
        try alice.request("call.reject", ringing("once", ["reason": "cancel"]))

        try daemon.restart()
        let alice2 = try daemon.callClient("alice")
        let bob = try daemon.callClient("bob")
        let state = try alice2.request("call.get", ringing("once"))
        XCTAssertEqual(jsonAt(state, "call", "ended_reason") as? String, "cancelled")
        let again = try alice2.request("call.get_or_create", ringing("once", ["members": ["bob"], "ring": true]))
        XCTAssertEqual(again["created"] as? Bool, false)
        XCTAssertEqual(jsonAt(again, "call", "ended_reason") as? String, "cancelled", "get_or_create does not reopen")
        let reopened = try alice2.request("call.join", ringing("once", ["create": true, "ring": true, "members": ["bob"]]))
        XCTAssertEqual(jsonInt(jsonAt(reopened, "call", "session")), 2)
        XCTAssertEqual(reopened["role"] as? String, "initiator")
        XCTAssertEqual(memberStates(reopened), ["alice:none", "bob:rejected:cancel"])
        XCTAssertEqual(try bob.pendingTypes(), [], "a call id rings at most once, across restarts")
        XCTAssertEqual(try bob.requestError("call.accept", ringing("once")), "conflict")
    }

    // MARK: - Participants (6.5, 6.9)

    func test_theDominantSpeakerChangesOnlyAfterTheHoldAndMediaUpdatesFollowTheDocumentedRules() throws {
        let daemon = try TestDaemon.calls(["calls.dominant_speaker_hold_ms": .int(1000)], wallClock: ManualWallClock())
        let ann = try daemon.callClient("ann")
        let ben = try daemon.callClient("ben")
        let annSession = try XCTUnwrap(try ann.request("call.join", m1(["create": true]))["session_id"] as? String)
        let benSession = try XCTUnwrap(try ben.request("call.join", m1)["session_id"] as? String)
        try ann.event("call.participant_joined")

        try ann.request("call.update_participant", m1(["speaking": true, "audio_level": 0.5]))
        XCTAssertEqual(jsonAt(try ben.event("call.dominant_speaker_changed"), "data", "session_id") as? String, annSession)
        XCTAssertEqual(jsonAt(try ann.event("call.dominant_speaker_changed"), "data", "session_id") as? String, annSession)
        // Ben is louder, but ann still speaks: no change before the hold.
        try ben.request("call.update_participant", m1(["speaking": true, "audio_level": 0.9]))
        daemon.advance(by: .milliseconds(999))
        try ben.request("call.update_participant", m1(["audio_level": 0.92]))
        XCTAssertFalse(try ann.pendingTypes().contains("call.dominant_speaker_changed"), "switched before the hold")
        // The first update at least the hold after the challenge started switches.
        daemon.advance(by: .milliseconds(2))
        try ben.request("call.update_participant", m1(["audio_level": 0.93]))
        let changed = try ann.event("call.dominant_speaker_changed")
        XCTAssertEqual(jsonAt(changed, "data", "session_id") as? String, benSession)
        XCTAssertEqual(jsonAt(changed, "data", "user_id") as? String, "ben")
        XCTAssertEqual(jsonAt(try ann.request("call.get", m1), "call", "dominant_speaker") as? String, benSession)

        // An update that changes nothing is answered and sends no event.
        try ann.takeInbox()
        let same = try ben.request("call.update_participant", m1(["audio_level": 0.93]))
        XCTAssertEqual(same["audio_level"] as? Double, 0.93)
        XCTAssertEqual(try ann.pendingTypes(), [])
        // The holder leaving clears the floor, or passes it to the loudest speaker left.
        try ben.request("call.leave", m1)
        let passed = try ann.event("call.dominant_speaker_changed")
        XCTAssertEqual(jsonAt(passed, "data", "session_id") as? String, annSession)

        // With two sessions, update_participant must name one.
        try ann.request("call.join", m1)
        XCTAssertEqual(try ann.requestError("call.update_participant", m1(["video": true])), "invalid_request")
        XCTAssertEqual(try ann.requestError("call.update_participant", m1(["session_id": benSession, "video": true])), "session_not_found")
        XCTAssertEqual(try ann.requestError("call.update_participant", m1), "invalid_request", "no media field")
        XCTAssertEqual(try ann.request("call.update_participant", m1(["session_id": annSession, "video": true]))["video"] as? Bool, true)
    }

    func test_theAnswerToARequestComesBeforeTheEventsItCaused() throws {
        let daemon = try TestDaemon.calls()
        let ann = try daemon.callClient("ann")
        try ann.request("call.join", m1(["create": true]))
        try ann.takeInbox()
        try ann.request("call.send_event", m1(["custom": ["n": 1]]))
        XCTAssertEqual(ann.inbox.count, 0, "an event arrived before the answer")
        try ann.request("call.update_participant", m1(["audio": true]))
        XCTAssertEqual(ann.inbox.map { $0["type"] as? String }, ["call.custom"])
        try ann.event("call.custom")
        try ann.event("call.participant_updated")
    }

    // MARK: - Admin API and draining (6.1, 6.16)

    func test_theAdminAPIEndsCallsAndRemovesSessionsAndTheParticipantsAreTold() throws {
        let daemon = try TestDaemon.calls()
        let ann = try daemon.callClient("ann")
        let ben = try daemon.callClient("ben")
        let annSession = try XCTUnwrap(try ann.request("call.join", m1(["create": true]))["session_id"] as? String)
        let benSession = try XCTUnwrap(try ben.request("call.join", m1)["session_id"] as? String)
        try ann.event("call.participant_joined")

        let kicked = try daemon.admin("DELETE", "/v1/calls/default/m1/sessions/\(benSession)", token: TestDaemon.callAdminToken)
        XCTAssertEqual(kicked.status, 200, kicked.text)
        let left = try ann.event("call.participant_left")
        XCTAssertEqual(jsonAt(left, "data", "participant", "session_id") as? String, benSession)
        XCTAssertEqual(jsonAt(left, "data", "participant", "reason") as? String, "kicked")
        XCTAssertEqual(try ben.requestError("call.send_event", m1(["custom": ["x": 1]])), "not_a_member")
        XCTAssertEqual(try daemon.connectionList().first { $0["user_id"] as? String == "ben" }?["sessions"] as? [String], [])

        let ended = try daemon.admin("POST", "/v1/calls/default/m1/end", token: TestDaemon.callAdminToken)
        XCTAssertEqual(ended.status, 200, ended.text)
        XCTAssertEqual(jsonAt(try ann.event("call.ended"), "data", "reason") as? String, "admin")
        XCTAssertEqual(try daemon.admin("POST", "/v1/calls/default/m1/end", token: TestDaemon.callAdminToken).status, 409)
        let stored = try daemon.storedCall("default", "m1")
        XCTAssertEqual(jsonAt(stored, "call", "ended_reason") as? String, "admin")
        XCTAssertEqual(
            jsonObjects(stored["sessions"]).map { "\($0["session_id"] as? String ?? ""):\($0["left_reason"] as? String ?? "-")" }.sorted(),
            ["\(annSession):call_ended", "\(benSession):kicked"].sorted())
    }

    func test_whileTheDaemonDrainsANewCallSocketIsClosedWith1001() throws {
        let daemon = try TestDaemon.calls()
        let alice = try daemon.callClient("alice")
        let drain = try daemon.admin("POST", "/v1/drain", token: TestDaemon.callAdminToken)
        XCTAssertLessThan(drain.status, 300, drain.text)
        let late = try CallTestClient.open(daemon, name: "late")
        XCTAssertEqual(try late.awaitClose().code, 1001)
        try alice.ping()
    }
}
