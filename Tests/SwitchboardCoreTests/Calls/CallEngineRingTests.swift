import Foundation
import SwitchboardCore
import XCTest

/// The ring state machine: `ringing` → `accepted` | `rejected` (decline, busy, cancel) | `missed`,
/// and how a ring ends the call.
final class CallEngineRingTests: XCTestCase {
    let call = CallFixture.cid("ringing", "c1")
    let alice = CallFixture.actor("alice")
    let bobPhone = CallFixture.actor("bob", device: "phone")
    let carol = CallFixture.actor("carol")

    /// alice rings `members` in `call` with get_or_create.
    private func ringing(_ members: [String] = ["bob", "carol"], _ configuration: CallConfiguration = CallConfiguration()) throws -> EngineHarness {
        var h = EngineHarness(configuration)
        try h.getOrCreate(call, members: members, ring: true, by: alice)
        return h
    }

    // MARK: Ring on creation

    func test_creatingARingingCallRingsEveryOtherMemberOnce() throws {
        var h = EngineHarness()
        let result = try h.getOrCreate(call, members: ["carol", "bob", "alice"], ring: true, by: alice)

        XCTAssertEqual(result["created"], .bool(true))
        XCTAssertEqual(result["call"]?["ringing"], .bool(true))
        let rings = h.last.notices("call.ring")
        XCTAssertEqual(rings.map(\.users), [[CallFixture.user("bob")], [CallFixture.user("carol")]])
        XCTAssertEqual(rings.map { $0.connections }, [[], []])
        XCTAssertEqual(rings.first?.string("from"), "alice")
        XCTAssertEqual(rings.first?.data["ring_deadline"], .time(CallFixture.at(30)))
        XCTAssertEqual(rings.first?.cid, call)
        XCTAssertEqual(h.member("alice", of: call)?.ringState, RingState.none)
        XCTAssertEqual(h.member("bob", of: call)?.ringState, .ringing)
        XCTAssertEqual(h.member("bob", of: call)?.ringDeadline, CallFixture.at(30))
        XCTAssertEqual(h.member("carol", of: call)?.ringState, .ringing)
        XCTAssertEqual(h.call(call)?.members.count, 3)
        let record = try XCTUnwrap(h.call(call)?.record)
        XCTAssertTrue(record.rung)
        XCTAssertEqual(record.autoCancelAt, CallFixture.at(30))
        XCTAssertNil(record.emptyDeadline)
        XCTAssertEqual(h.last.loggedEvents, ["call.created", "call.ring"])
        XCTAssertEqual(h.last.savedCalls.last?.rung, true)
        XCTAssertEqual(h.last.savedMembers.filter { $0.ringState == .ringing }.map(\.userID.rawValue), ["bob", "carol"])
        XCTAssertEqual(h.last.metrics, [.callStarted])
        XCTAssertEqual(h.engine.nextDeadline, CallFixture.at(30))
    }

    func test_aMeetingCannotRingAndNothingIsCreated() {
        var h = EngineHarness()
        let meeting = CallFixture.cid("default", "m1")
        assertCallError(.invalidRequest) { try h.getOrCreate(meeting, members: ["bob"], ring: true, by: alice) }
        XCTAssertNil(h.call(meeting))
        XCTAssertTrue(h.last.isEmpty)
    }

    func test_ringingNeedsAMemberBesidesTheCaller() {
        var h = EngineHarness()
        assertCallError(.invalidRequest) { try h.getOrCreate(call, members: ["alice"], ring: true, by: alice) }
        XCTAssertNil(h.call(call))
        XCTAssertTrue(h.last.isEmpty)
    }

    // MARK: Busy

    func test_aCalleeInAnotherLiveCallIsRejectedBusy() throws {
        var h = EngineHarness()
        try h.join(CallFixture.cid("default", "standup"), by: bobPhone, create: true)
        try h.getOrCreate(call, members: ["bob", "carol"], ring: true, by: alice)

        XCTAssertEqual(h.member("bob", of: call)?.ringState, .rejected)
        XCTAssertEqual(h.member("bob", of: call)?.ringReason, .busy)
        XCTAssertNil(h.member("bob", of: call)?.ringDeadline)
        XCTAssertEqual(h.member("carol", of: call)?.ringState, .ringing)
        XCTAssertEqual(h.last.notices("call.ring").map(\.users), [[CallFixture.user("carol")]])
        let rejected = try XCTUnwrap(h.last.notice("call.rejected"))
        XCTAssertEqual(rejected.users, [CallFixture.user("alice")], "a busy callee was never rung: only the caller hears")
        XCTAssertNil(rejected.except)
        XCTAssertEqual(rejected.string("reason"), "busy")
        XCTAssertEqual(rejected.string("user_id"), "bob")
        XCTAssertTrue(h.call(call)!.record.isLive)
        XCTAssertTrue(h.last.metrics.contains(.ringOutcome("busy", answeredAfter: nil)))
    }

    func test_whenTheOnlyCalleeIsBusyTheCallEndsAllRejected() throws {
        var h = EngineHarness()
        try h.join(CallFixture.cid("default", "standup"), by: bobPhone, create: true)
        try h.getOrCreate(call, members: ["bob"], ring: true, by: alice)

        XCTAssertEqual(h.last.noticeTypes, ["call.rejected", "call.ended"])
        XCTAssertEqual(h.last.notice("call.ended")?.string("reason"), "all_rejected")
        XCTAssertEqual(h.call(call)?.record.endedReason, .allRejected)
    }

    func test_aCalleeWhoseOtherCallEndedIsNotBusy() throws {
        var h = EngineHarness()
        let standup = CallFixture.cid("default", "standup")
        try h.join(standup, by: bobPhone, create: true)
        try h.end(standup, by: bobPhone)
        try h.getOrCreate(call, members: ["bob"], ring: true, by: alice)
        XCTAssertEqual(h.member("bob", of: call)?.ringState, .ringing)
    }

    func test_busyPolicyRingRingsABusyCalleeAnyway() throws {
        var h = EngineHarness(CallFixture.configuration(ringing: CallFixture.ringing(busy: .ring)))
        try h.join(CallFixture.cid("default", "standup"), by: bobPhone, create: true)
        try h.getOrCreate(call, members: ["bob"], ring: true, by: alice)
        XCTAssertEqual(h.member("bob", of: call)?.ringState, .ringing)
        XCTAssertEqual(h.last.notices("call.ring").map(\.users), [[CallFixture.user("bob")]])
        XCTAssertTrue(h.last.notices("call.rejected").isEmpty)
    }

    // MARK: Accept

    func test_acceptTellsTheCallerAndStopsTheCalleesOtherDevicesOnly() throws {
        var h = try ringing()
        let aliceSession = try h.join(call, by: alice)
        h.advance(4)
        let result = try h.accept(call, by: bobPhone)

        let bob = try XCTUnwrap(h.member("bob", of: call))
        XCTAssertEqual(bob.ringState, .accepted)
        XCTAssertNil(bob.ringDeadline)
        XCTAssertEqual(bob.ringUpdatedAt, CallFixture.at(4))
        XCTAssertNil(h.call(call)?.record.autoCancelAt)
        XCTAssertEqual(h.last.noticeTypes, ["call.accepted", "call.ring_stopped"])
        let accepted = try XCTUnwrap(h.last.notice("call.accepted"))
        XCTAssertEqual(accepted.users, [CallFixture.user("alice")])
        XCTAssertEqual(accepted.connections, [alice.connection])
        XCTAssertEqual(accepted.string("user_id"), "bob")
        let stopped = try XCTUnwrap(h.last.notice("call.ring_stopped"))
        XCTAssertEqual(stopped.users, [CallFixture.user("bob")])
        XCTAssertEqual(stopped.except, bobPhone.connection)
        XCTAssertTrue(stopped.connections.isEmpty)
        XCTAssertEqual(stopped.string("reason"), "accepted_elsewhere")
        XCTAssertEqual(h.last.savedMembers.map(\.ringState), [.accepted])
        XCTAssertEqual(h.last.loggedEvents, ["call.accepted"])
        XCTAssertEqual(h.last.metrics, [.ringOutcome("accepted", answeredAfter: .seconds(4))])
        XCTAssertEqual(result["members"]?.arrayValue?.compactMap { $0["ring_state"]?.stringValue }, ["none", "accepted", "ringing"])
        XCTAssertEqual(h.engine.sessions(of: alice.connection), [aliceSession])
    }

    func test_onlyARingingMemberMayAccept() throws {
        var h = try ringing()
        assertCallError(.conflict) { try h.accept(call, by: alice) }
        assertCallError(.notAMember) { try h.accept(call, by: CallFixture.actor("mallory")) }
        assertCallError(.callNotFound) { try h.accept(CallFixture.cid("ringing", "nope"), by: bobPhone) }
        XCTAssertTrue(h.last.isEmpty)
    }

    // MARK: Reject

    func test_declineSendsCallRejectedToTheCallerAndTheCalleesOtherDevices() throws {
        var h = try ringing()
        h.advance(2)
        try h.reject(call, reason: .decline, by: bobPhone)

        let bob = try XCTUnwrap(h.member("bob", of: call))
        XCTAssertEqual(bob.ringState, .rejected)
        XCTAssertEqual(bob.ringReason, .decline)
        XCTAssertNil(bob.ringDeadline)
        XCTAssertEqual(bob.ringUpdatedAt, CallFixture.at(2))
        let rejected = try XCTUnwrap(h.last.notice("call.rejected"))
        XCTAssertEqual(rejected.users, [CallFixture.user("alice"), CallFixture.user("bob")])
        XCTAssertEqual(rejected.except, bobPhone.connection)
        XCTAssertEqual(rejected.string("reason"), "decline")
        XCTAssertEqual(rejected.string("user_id"), "bob")
        XCTAssertEqual(h.last.noticeTypes, ["call.rejected"])
        XCTAssertTrue(h.call(call)!.record.isLive)
        XCTAssertEqual(h.member("carol", of: call)?.ringState, .ringing)
        XCTAssertEqual(h.last.metrics, [.ringOutcome("rejected_decline", answeredAfter: .seconds(2))])
    }

    func test_whenEveryCalleeRejectsTheCallEndsAllRejected() throws {
        var h = try ringing()
        try h.reject(call, by: bobPhone)
        try h.reject(call, by: carol)

        XCTAssertEqual(h.last.noticeTypes, ["call.rejected", "call.ended"])
        let ended = try XCTUnwrap(h.last.notice("call.ended"))
        XCTAssertEqual(ended.string("reason"), "all_rejected")
        XCTAssertEqual(ended.users, [CallFixture.user("alice")])
        let record = try XCTUnwrap(h.call(call)?.record)
        XCTAssertEqual(record.endedReason, .allRejected)
        XCTAssertEqual(record.endedAt, CallFixture.base)
        XCTAssertNil(record.autoCancelAt)
        XCTAssertEqual(h.last.releasedPlacements, [], "nobody joined: the call never had an SFU")
        XCTAssertFalse(h.last.mutations.contains(.deletePlacement(call)))
        XCTAssertTrue(h.last.metrics.contains(.callEnded(.allRejected)))
        XCTAssertTrue(h.last.notices("call.missed").isEmpty)
        XCTAssertEqual(h.engine.liveCallCount, 0)
    }

    // MARK: Timeouts

    func test_aCalleeWhoDoesNotAnswerInTimeBecomesMissed() throws {
        var h = try ringing()
        try h.accept(call, by: bobPhone)
        h.advance(29.5)
        h.tick()
        XCTAssertTrue(h.last.isEmpty)
        XCTAssertEqual(h.member("carol", of: call)?.ringState, .ringing)

        h.advance(0.5)
        h.tick()
        let carolMember = try XCTUnwrap(h.member("carol", of: call))
        XCTAssertEqual(carolMember.ringState, .missed)
        XCTAssertNil(carolMember.ringDeadline)
        XCTAssertEqual(carolMember.ringUpdatedAt, CallFixture.at(30))
        let stopped = try XCTUnwrap(h.last.notice("call.ring_stopped"))
        XCTAssertEqual(stopped.users, [CallFixture.user("carol")])
        XCTAssertEqual(stopped.string("reason"), "timeout")
        XCTAssertEqual(h.last.loggedEvents.first, "call.missed")
        XCTAssertTrue(h.last.notices("call.missed").isEmpty, "somebody accepted: the caller has not missed the call")
        XCTAssertTrue(h.call(call)!.record.isLive)
    }

    func test_whenTheOnlyCalleeTimesOutTheCallerGetsCallMissedAndTheCallEndsNoAnswer() throws {
        var h = try ringing(["bob"], CallFixture.configuration(ringing: CallFixture.ringing(incoming: 20, autoCancel: 40)))
        h.advance(20)
        h.tick()

        XCTAssertEqual(h.member("bob", of: call)?.ringState, .missed)
        XCTAssertEqual(h.last.noticeTypes, ["call.ring_stopped", "call.missed", "call.ended"])
        XCTAssertEqual(h.last.notice("call.missed")?.users, [CallFixture.user("alice")])
        XCTAssertEqual(h.last.notice("call.ended")?.string("reason"), "no_answer")
        XCTAssertEqual(h.call(call)?.record.endedReason, .noAnswer)
        XCTAssertEqual(h.call(call)?.record.endedAt, CallFixture.at(20))
        XCTAssertNil(h.engine.nextDeadline)
    }

    func test_autoCancelMarksEveryoneMissedSendsCallMissedAndEndsNoAnswer() throws {
        var h = try ringing(["bob", "carol"], CallFixture.configuration(ringing: CallFixture.ringing(incoming: 60, autoCancel: 20)))
        XCTAssertEqual(h.engine.nextDeadline, CallFixture.at(20))
        h.advance(19)
        h.tick()
        XCTAssertTrue(h.last.isEmpty)

        h.advance(1)
        h.tick()
        XCTAssertEqual(h.member("bob", of: call)?.ringState, .missed)
        XCTAssertEqual(h.member("carol", of: call)?.ringState, .missed)
        XCTAssertEqual(h.last.notices("call.ring_stopped").map(\.users), [[CallFixture.user("bob")], [CallFixture.user("carol")]])
        let missed = try XCTUnwrap(h.last.notice("call.missed"))
        XCTAssertEqual(missed.users, [CallFixture.user("alice")])
        XCTAssertTrue(missed.connections.isEmpty)
        XCTAssertEqual(h.last.notice("call.ended")?.string("reason"), "no_answer")
        let record = try XCTUnwrap(h.call(call)?.record)
        XCTAssertEqual(record.endedReason, .noAnswer)
        XCTAssertNil(record.autoCancelAt)
        XCTAssertTrue(h.last.metrics.contains(.callEnded(.noAnswer)))
    }

    func test_oneRejectedAndOneMissedEndsNoAnswerNotAllRejected() throws {
        var h = try ringing()
        try h.reject(call, by: carol)
        h.advance(30)
        h.tick()
        XCTAssertEqual(h.call(call)?.record.endedReason, .noAnswer)
        XCTAssertEqual(h.last.notices("call.missed").count, 1)
    }

    // MARK: Cancel and the caller leaving

    func test_theCallerCancellingStopsTheRingAndEndsTheCallCancelled() throws {
        var h = try ringing()
        h.advance(3)
        try h.reject(call, reason: .cancel, by: alice)

        for user in ["bob", "carol"] {
            XCTAssertEqual(h.member(user, of: call)?.ringState, .rejected, user)
            XCTAssertEqual(h.member(user, of: call)?.ringReason, .cancel, user)
        }
        XCTAssertEqual(h.last.noticeTypes, ["call.ring_stopped", "call.ended"])
        let stopped = try XCTUnwrap(h.last.notice("call.ring_stopped"))
        XCTAssertEqual(stopped.users, [CallFixture.user("bob"), CallFixture.user("carol")])
        XCTAssertEqual(stopped.string("reason"), "cancelled")
        let ended = try XCTUnwrap(h.last.notice("call.ended"))
        XCTAssertEqual(ended.string("reason"), "cancelled")
        XCTAssertTrue(ended.users.contains(CallFixture.user("alice")))
        XCTAssertEqual(h.call(call)?.record.endedReason, .cancelled)
        XCTAssertEqual(h.call(call)?.record.endedAt, CallFixture.at(3))
    }

    func test_theCallerMayOnlyCancel() throws {
        var h = try ringing()
        assertCallError(.conflict) { try h.reject(call, reason: .decline, by: alice) }
        XCTAssertTrue(h.last.isEmpty)
        XCTAssertEqual(h.call(call)?.ringingMembers.count, 2)
    }

    func test_cancellingAfterAnAcceptStopsTheOtherRingsAndKeepsTheCall() throws {
        var h = try ringing()
        try h.accept(call, by: bobPhone)
        try h.reject(call, reason: .cancel, by: alice)

        XCTAssertEqual(h.last.notice("call.ring_stopped")?.users, [CallFixture.user("carol")])
        XCTAssertEqual(h.member("carol", of: call)?.ringReason, .cancel)
        XCTAssertEqual(h.member("bob", of: call)?.ringState, .accepted)
        XCTAssertTrue(h.call(call)!.record.isLive)
        XCTAssertTrue(h.last.notices("call.ended").isEmpty)
    }

    func test_theInitiatorLeavingARingingCallStopsTheRingAndEndsItInitiatorLeft() throws {
        var h = EngineHarness()
        try h.join(call, by: alice, create: true, ring: true, members: ["bob"])
        h.advance(5)
        try h.leave(call, by: alice)

        XCTAssertEqual(h.member("bob", of: call)?.ringState, .rejected)
        XCTAssertEqual(h.member("bob", of: call)?.ringReason, .cancel)
        XCTAssertEqual(h.last.notice("call.ring_stopped")?.string("reason"), "cancelled")
        XCTAssertEqual(h.last.notice("call.ring_stopped")?.users, [CallFixture.user("bob")])
        XCTAssertEqual(h.last.notice("call.ended")?.string("reason"), "initiator_left")
        XCTAssertEqual(h.call(call)?.record.endedReason, .initiatorLeft)
        XCTAssertEqual(h.engine.sessionCount, 0)
    }

    func test_theInitiatorLeavingAfterAnAcceptEndsTheCallForEveryone() throws {
        var h = EngineHarness()
        try h.join(call, by: alice, create: true, ring: true, members: ["bob"])
        let bobSession = try h.join(call, by: bobPhone)
        try h.leave(call, by: alice)

        let ended = try XCTUnwrap(h.last.notice("call.ended"))
        XCTAssertEqual(ended.string("reason"), "initiator_left")
        XCTAssertEqual(ended.connections, [bobPhone.connection])
        let bobLeft = h.last.savedSessions.first { $0.sessionID == bobSession }
        XCTAssertEqual(bobLeft?.leftReason, "call_ended")
        XCTAssertEqual(bobLeft?.leftAt, CallFixture.base)
        XCTAssertNil(h.engine.callOf(session: bobSession))
    }

    func test_aParticipantLeavingNeverEndsARingingCall() throws {
        var h = EngineHarness()
        try h.join(call, by: alice, create: true, ring: true, members: ["bob", "carol"])
        try h.join(call, by: bobPhone)
        try h.leave(call, by: bobPhone)

        XCTAssertTrue(h.call(call)!.record.isLive)
        XCTAssertEqual(h.last.noticeTypes, ["call.participant_left"])
        XCTAssertEqual(h.last.notice("call.participant_left")?.connections, [alice.connection])
        XCTAssertEqual(h.member("carol", of: call)?.ringState, .ringing)
    }

    func test_theInitiatorLeavingAMeetingDoesNotEndIt() throws {
        var h = EngineHarness()
        let meeting = CallFixture.cid("default", "m1")
        try h.join(meeting, by: alice, create: true)
        try h.join(meeting, by: carol)
        try h.leave(meeting, by: alice)
        XCTAssertTrue(h.call(meeting)!.record.isLive)
        XCTAssertTrue(h.last.notices("call.ended").isEmpty)
    }

    // MARK: Ring only once per id

    func test_getOrCreateAgainWithRingNeverRingsAgain() throws {
        var h = try ringing(["bob"])
        h.advance(1)
        let again = try h.getOrCreate(call, members: ["bob"], ring: true, by: alice)
        XCTAssertEqual(again["created"], .bool(false))
        XCTAssertTrue(h.last.isEmpty)
        XCTAssertEqual(h.member("bob", of: call)?.ringDeadline, CallFixture.at(30))
    }

    func test_aReopenAfterTheEndNeverRingsAgain() throws {
        var h = try ringing(["bob"])
        try h.reject(call, by: bobPhone)
        XCTAssertFalse(h.call(call)!.record.isLive)

        h.advance(10)
        let result = try h.joinResult(call, by: alice, create: true, ring: true, members: ["bob"])
        XCTAssertEqual(result["call"]?["session"], .number(2))
        XCTAssertTrue(h.last.notices("call.ring").isEmpty)
        XCTAssertEqual(h.member("bob", of: call)?.ringState, .rejected)
        XCTAssertFalse(h.last.loggedEvents.contains("call.ring"))
        XCTAssertTrue(h.engine.pendingRings(for: CallFixture.user("bob")).isEmpty)
    }

    func test_aRingingCallCreatedWithoutRingNeverRingsLater() throws {
        var h = EngineHarness()
        try h.getOrCreate(call, members: ["bob"], ring: false, by: alice)
        XCTAssertFalse(h.call(call)!.record.rung)
        try h.getOrCreate(call, members: ["bob"], ring: true, by: alice)
        try h.join(call, by: alice, ring: true)
        XCTAssertEqual(h.member("bob", of: call)?.ringState, RingState.none)
        XCTAssertTrue(h.last.notices("call.ring").isEmpty)
    }

    // MARK: Pending rings

    func test_pendingRingsListEveryCallStillRingingAUser() throws {
        var h = try ringing(["bob"])
        let other = CallFixture.cid("ringing", "c2")
        try h.getOrCreate(other, members: ["bob"], ring: true, by: carol)

        let pending = h.engine.pendingRings(for: CallFixture.user("bob"))
        XCTAssertEqual(pending.map(\.cid), [call, other])
        XCTAssertEqual(pending.map(\.type), ["call.ring", "call.ring"])
        XCTAssertEqual(pending.map(\.users), [[CallFixture.user("bob")], [CallFixture.user("bob")]])
        XCTAssertEqual(pending.map { $0.string("from") }, ["alice", "carol"])

        try h.accept(call, by: bobPhone)
        XCTAssertEqual(h.engine.pendingRings(for: CallFixture.user("bob")).map(\.cid), [other])
        XCTAssertTrue(h.engine.pendingRings(for: CallFixture.user("alice")).isEmpty)
    }

    // MARK: Rate limit

    func test_ringsPerReceiverAreRateLimitedAndARefusedRingChangesNothing() throws {
        var h = EngineHarness(CallConfiguration(ringRatePerMinute: 60, ringBurst: 1))
        try h.getOrCreate(call, members: ["bob"], ring: true, by: alice)

        let second = CallFixture.cid("ringing", "c2")
        assertCallError(.rateLimited) { try h.getOrCreate(second, members: ["carol", "bob"], ring: true, by: alice) }
        XCTAssertNil(h.call(second))
        XCTAssertTrue(h.last.isEmpty)
        XCTAssertEqual(h.member("bob", of: call)?.ringState, .ringing)
        XCTAssertEqual(h.engine.liveCallCount, 1)

        // carol's token was not spent by the refused ring; bob's refills at one a second.
        try h.getOrCreate(CallFixture.cid("ringing", "c3"), members: ["carol"], ring: true, by: alice)
        assertCallError(.rateLimited) { try h.join(CallFixture.cid("ringing", "c4"), by: alice, create: true, ring: true, members: ["bob"]) }
        XCTAssertNil(h.call(CallFixture.cid("ringing", "c4")))
        h.advance(2)
        try h.getOrCreate(CallFixture.cid("ringing", "c5"), members: ["bob"], ring: true, by: alice)
        XCTAssertEqual(h.member("bob", of: CallFixture.cid("ringing", "c5"))?.ringState, .ringing)
    }
}
