import Foundation
import SwitchboardCore
import XCTest

/// `call.join`, `call.leave` and `call.invite`: who may join, placement, reopening, sessions.
final class CallEngineJoinTests: XCTestCase {
    let meeting = CallFixture.cid("default", "standup")
    let ringCall = CallFixture.cid("ringing", "c1")
    let alice = CallFixture.actor("alice")
    let bob = CallFixture.actor("bob")
    let carol = CallFixture.actor("carol")
    let dave = CallFixture.actor("dave")

    private func users(_ participants: JSONValue?) -> [String] {
        participants?.arrayValue?.compactMap { $0["user_id"]?.stringValue } ?? []
    }

    // MARK: Who may join

    func test_joiningWithCreateMakesTheJoinerTheInitiatorWithTheCallsSFU() throws {
        var h = EngineHarness()
        let hint = LocationHint(region: "fra")
        let result = try h.joinResult(meeting, by: alice, create: true, location: hint)

        XCTAssertEqual(result["session_id"], .string("s-1"))
        XCTAssertEqual(result["role"], .string("initiator"))
        XCTAssertEqual(result["sfu"], .object(["id": .string("sfu-fra-1"), "kind": .string("heartbeat"), "url": .string("wss://sfu-fra-1.example/sfu"), "region": .string("fra")]))
        XCTAssertEqual(result["call"]?["cid"], .string("default:standup"))
        XCTAssertEqual(result["call"]?["created_by"], .string("alice"))
        XCTAssertEqual(result["call"]?["session"], .number(1))
        XCTAssertEqual(users(result["participants"]), ["alice"])
        XCTAssertEqual(h.placer.requests.count, 1)
        XCTAssertEqual(h.placer.requests.first?.cid, meeting)
        XCTAssertEqual(h.placer.requests.first?.participants, [hint])
        XCTAssertEqual(h.call(meeting)?.sfu, CallFixture.sfu)
        let session = try XCTUnwrap(h.last.savedSessions.last)
        XCTAssertEqual(session.sessionID, SessionID("s-1"))
        XCTAssertEqual(session.role, .initiator)
        XCTAssertEqual(session.callSession, 1)
        XCTAssertEqual(session.connection, alice.connection)
        XCTAssertEqual(session.joinedAt, CallFixture.base)
        XCTAssertEqual(session.location, hint)
        XCTAssertNil(session.leftAt)
        XCTAssertEqual(h.last.loggedEvents, ["call.created", "call.session_started", "call.participant_joined"])
        XCTAssertEqual(h.last.metrics, [.callStarted, .joined])
        XCTAssertEqual(h.engine.callOf(session: SessionID("s-1")), meeting)
        XCTAssertEqual(h.engine.sessions(of: alice.connection), [SessionID("s-1")])
    }

    func test_anyoneMayJoinAMeetingAndTheOthersAreTold() throws {
        var h = EngineHarness()
        try h.join(meeting, by: alice, create: true, location: LocationHint(region: "fra"))
        h.advance(1)
        let result = try h.joinResult(meeting, by: carol, location: LocationHint(region: "iad"))

        XCTAssertEqual(result["role"], .string("participant"))
        XCTAssertEqual(users(result["participants"]), ["alice", "carol"])
        let joined = try XCTUnwrap(h.last.notice("call.participant_joined"))
        XCTAssertEqual(joined.connections, [alice.connection])
        XCTAssertTrue(joined.users.isEmpty)
        XCTAssertEqual(joined.data["participant"]?["user_id"], .string("carol"))
        XCTAssertEqual(joined.data["participant"]?["session_id"], .string("s-2"))
        XCTAssertEqual(joined.data["participant"]?["role"], .string("participant"))
        XCTAssertEqual(h.placer.requests.last?.participants.map(\.region), ["fra", "iad"])
        XCTAssertNil(h.call(meeting)?.members[CallFixture.user("carol")], "joining a meeting does not make a member")
    }

    func test_onlyMembersMayJoinARingingCallUnlessAdmin() throws {
        var h = EngineHarness()
        try h.getOrCreate(ringCall, members: ["bob"], by: alice)
        let requestsBefore = h.placer.requests.count

        assertCallError(.notAMember) { try h.join(ringCall, by: dave) }
        XCTAssertTrue(h.last.isEmpty)
        XCTAssertEqual(h.placer.requests.count, requestsBefore)
        assertCallError(.notAMember) { try h.getOrCreate(ringCall, by: dave) }

        try h.join(ringCall, by: bob)
        try h.join(ringCall, by: CallFixture.actor("dave", admin: true))
        XCTAssertEqual(h.call(ringCall)?.sessions.count, 2)
    }

    func test_aCallAtItsMaximumParticipantsIsFull() throws {
        var settings = CallTypeSettings.meeting
        settings.maxParticipants = 2
        var h = EngineHarness(CallFixture.configuration(meeting: settings))
        try h.join(meeting, by: alice, create: true)
        try h.join(meeting, by: bob)
        let asked = h.placer.requests.count

        assertCallError(.callFull) { try h.join(meeting, by: carol) }
        XCTAssertTrue(h.last.isEmpty)
        XCTAssertEqual(h.placer.requests.count, asked)
        XCTAssertEqual(h.call(meeting)?.sessions.count, 2)

        try h.leave(meeting, by: bob)
        try h.join(meeting, by: carol)
        XCTAssertEqual(h.call(meeting)?.sessions.count, 2)
    }

    func test_joiningAnUnknownCallWithoutCreateIsCallNotFound() {
        var h = EngineHarness()
        assertCallError(.callNotFound) { try h.join(meeting, by: alice) }
        XCTAssertNil(h.call(meeting))
        XCTAssertTrue(h.last.isEmpty)
        XCTAssertTrue(h.placer.requests.isEmpty)
    }

    func test_anUnknownCallTypeIsAnInvalidRequest() {
        var h = EngineHarness()
        assertCallError(.invalidRequest) { try h.join(CallFixture.cid("livestream", "x"), by: alice, create: true) }
        XCTAssertTrue(h.last.isEmpty)
    }

    // MARK: Reopening

    func test_aJoinReopensAnEndedCallAsItsNextSessionWithoutRinging() throws {
        var h = EngineHarness()
        try h.join(ringCall, by: alice, create: true, ring: true, members: ["bob"])
        try h.end(ringCall, by: alice)
        h.advance(30)

        let result = try h.joinResult(ringCall, by: bob, ring: true)
        XCTAssertEqual(result["call"]?["session"], .number(2))
        XCTAssertEqual(result["call"]?["ended_at"], .null)
        XCTAssertEqual(result["role"], .string("participant"))
        let record = try XCTUnwrap(h.call(ringCall)?.record)
        XCTAssertEqual(record.session, 2)
        XCTAssertTrue(record.isLive)
        XCTAssertNil(record.endedReason)
        XCTAssertEqual(h.last.savedCalls.first?.session, 2)
        XCTAssertEqual(h.last.savedSessions.last?.callSession, 2)
        XCTAssertEqual(h.last.loggedEvents, ["call.reopened", "call.session_started", "call.participant_joined"])
        XCTAssertEqual(h.last.metrics, [.callStarted, .joined])
        XCTAssertTrue(h.last.notices("call.ring").isEmpty)
        XCTAssertEqual(h.member("bob", of: ringCall)?.ringState, .rejected, "the ring of session 1 stays as it ended")
        XCTAssertEqual(h.engine.liveCallCount, 1)
    }

    func test_aTypeThatDoesNotReopenAnswersCallEnded() throws {
        var settings = CallTypeSettings.meeting
        settings.reopen = false
        var h = EngineHarness(CallFixture.configuration(meeting: settings))
        try h.join(meeting, by: alice, create: true)
        try h.end(meeting, by: alice)
        assertCallError(.callEnded) { try h.join(meeting, by: alice, create: true) }
        XCTAssertTrue(h.last.isEmpty)
        XCTAssertEqual(h.call(meeting)?.record.session, 1)
    }

    // MARK: Placement failures

    func test_noSFUAvailableLeavesAnExistingCallUntouched() throws {
        var h = EngineHarness()
        try h.join(meeting, by: alice, create: true)
        let before = h.call(meeting)
        h.placer.error = SwitchboardError(.noSFUAvailable, "every SFU is full")

        assertCallError(.noSFUAvailable) { try h.join(meeting, by: bob) }
        XCTAssertTrue(h.last.isEmpty, "\(h.last.mutations)")
        XCTAssertEqual(h.call(meeting), before)
        XCTAssertEqual(h.engine.sessionCount, 1)
        XCTAssertTrue(h.engine.sessions(of: bob.connection).isEmpty)
    }

    func test_noSFUAvailableDoesNotReopenAnEndedCall() throws {
        var h = EngineHarness()
        try h.join(meeting, by: alice, create: true)
        try h.end(meeting, by: alice)
        h.placer.error = SwitchboardError(.noSFUAvailable, "every SFU is full")

        assertCallError(.noSFUAvailable) { try h.join(meeting, by: alice) }
        XCTAssertTrue(h.last.isEmpty)
        XCTAssertEqual(h.call(meeting)?.record.session, 1)
        XCTAssertFalse(h.call(meeting)!.record.isLive)
    }

    func test_noSFUAvailableOnAJoinThatCreatesLeavesNoCallAndRingsNobody() throws {
        var h = EngineHarness(CallConfiguration(ringBurst: 1))
        h.placer.error = SwitchboardError(.noSFUAvailable, "every SFU is full")

        assertCallError(.noSFUAvailable) { try h.join(ringCall, by: alice, create: true, ring: true, members: ["bob"]) }
        XCTAssertTrue(h.last.isEmpty, "\(h.last.noticeTypes) \(h.last.mutations.count) mutations")
        XCTAssertNil(h.call(ringCall))
        XCTAssertEqual(h.engine.liveCallCount, 0)
        XCTAssertTrue(h.engine.pendingRings(for: CallFixture.user("bob")).isEmpty)
        XCTAssertNil(h.engine.nextDeadline)

        // Nothing was spent either: the retry creates the call and rings bob.
        h.placer.error = nil
        try h.join(ringCall, by: alice, create: true, ring: true, members: ["bob"])
        XCTAssertEqual(h.last.notices("call.ring").map(\.users), [[CallFixture.user("bob")]])
    }

    func test_withoutAnySFUTheCallIsPeerToPeer() throws {
        var h = EngineHarness()
        h.placer.assignment = nil
        let result = try h.joinResult(meeting, by: alice, create: true)
        XCTAssertEqual(result["sfu"], .null)
        XCTAssertEqual(result["call"]?["sfu"], .null)
    }

    // MARK: Participants

    func test_theJoinResultListsParticipantsInTheDefaultOrder() throws {
        var h = EngineHarness()
        try h.join(meeting, by: alice, create: true)
        try h.join(meeting, by: bob)
        try h.join(meeting, by: carol)
        try h.join(meeting, by: dave)
        try h.update(meeting, MediaUpdate(video: true), by: dave)
        try h.update(meeting, MediaUpdate(audio: true), by: carol)
        try h.update(meeting, MediaUpdate(screenshare: true), by: bob)

        let result = try h.joinResult(meeting, by: CallFixture.actor("erin"))
        XCTAssertEqual(users(result["participants"]), ["bob", "dave", "carol", "alice", "erin"])
        XCTAssertEqual(users(h.call(meeting)?.participantsJSON), ["bob", "dave", "carol", "alice", "erin"])
    }

    func test_joiningWhileBeingRungCountsAsAccepting() throws {
        var h = EngineHarness()
        try h.join(ringCall, by: alice, create: true, ring: true, members: ["bob"])
        h.advance(3)
        let bobLaptop = CallFixture.actor("bob", device: "laptop")
        try h.join(ringCall, by: bobLaptop)

        XCTAssertEqual(h.member("bob", of: ringCall)?.ringState, .accepted)
        XCTAssertNil(h.call(ringCall)?.record.autoCancelAt)
        XCTAssertEqual(h.last.noticeTypes, ["call.accepted", "call.ring_stopped", "call.participant_joined"])
        XCTAssertEqual(h.last.notice("call.accepted")?.users, [CallFixture.user("alice")])
        XCTAssertEqual(h.last.notice("call.accepted")?.connections, [alice.connection])
        XCTAssertEqual(h.last.notice("call.ring_stopped")?.except, bobLaptop.connection)
        XCTAssertEqual(h.last.notice("call.ring_stopped")?.string("reason"), "accepted_elsewhere")
        XCTAssertEqual(h.last.metrics.first, .ringOutcome("accepted", answeredAfter: .seconds(3)))
    }

    func test_aJoinCancelsTheEmptyTimer() throws {
        var h = EngineHarness()
        try h.getOrCreate(meeting, by: alice)
        XCTAssertEqual(h.call(meeting)?.record.emptyDeadline, CallFixture.at(300))
        h.advance(10)
        try h.join(meeting, by: bob)
        XCTAssertNil(h.call(meeting)?.record.emptyDeadline)
        XCTAssertEqual(h.last.savedCalls.map(\.emptyDeadline), [nil])
        h.advance(300)
        h.tick()
        XCTAssertTrue(h.call(meeting)!.record.isLive)
    }

    // MARK: Leave

    func test_oneConnectionMayHoldTwoSessionsAndLeaveThemOneByOne() throws {
        var h = EngineHarness()
        let first = try h.join(meeting, by: alice, create: true)
        let second = try h.join(meeting, by: alice)
        try h.join(meeting, by: bob)

        let left = try h.leave(meeting, session: second, by: alice)
        XCTAssertEqual(left, .object(["left": .array([.string(second.rawValue)])]))
        XCTAssertEqual(h.engine.sessions(of: alice.connection), [first])
        let saved = try XCTUnwrap(h.last.savedSessions.first)
        XCTAssertEqual(saved.leftReason, "left")
        XCTAssertEqual(saved.leftAt, CallFixture.base)
        let notice = try XCTUnwrap(h.last.notice("call.participant_left"))
        XCTAssertEqual(notice.connections, [alice.connection, bob.connection])
        XCTAssertEqual(notice.data["participant"]?["reason"], .string("left"))

        try h.join(meeting, by: alice)
        try h.leave(meeting, by: alice)
        XCTAssertTrue(h.engine.sessions(of: alice.connection).isEmpty)
        XCTAssertEqual(h.last.notices("call.participant_left").count, 2)
    }

    func test_leavingWithoutASessionIsAnError() throws {
        var h = EngineHarness()
        try h.join(meeting, by: alice, create: true)
        assertCallError(.notAMember) { try h.leave(meeting, by: bob) }
        assertCallError(.sessionNotFound) { try h.leave(meeting, session: SessionID("s-99"), by: alice) }
        assertCallError(.callNotFound) { try h.leave(CallFixture.cid("default", "other"), by: alice) }
        XCTAssertTrue(h.last.isEmpty)
    }

    func test_theLastParticipantLeavingArmsTheEmptyTimer() throws {
        var h = EngineHarness()
        try h.join(meeting, by: alice, create: true)
        h.advance(7)
        try h.leave(meeting, by: alice)
        XCTAssertEqual(h.call(meeting)?.record.emptyDeadline, CallFixture.at(307))
        XCTAssertEqual(h.engine.nextDeadline, CallFixture.at(307))
    }

    // MARK: Invite

    func test_membersMayInviteWithoutRinging() throws {
        var h = EngineHarness()
        try h.join(ringCall, by: alice, create: true, members: ["bob"])
        try h.invite(ringCall, ["bob", "carol"], by: alice)

        XCTAssertEqual(h.member("carol", of: ringCall)?.ringState, RingState.none)
        let added = try XCTUnwrap(h.last.notice("call.members_added"))
        XCTAssertEqual(added.users, [CallFixture.user("carol")])
        XCTAssertEqual(added.connections, [alice.connection])
        XCTAssertEqual(added.data["added"], .array([.string("carol")]))
        XCTAssertTrue(h.last.notices("call.ring").isEmpty)
        try h.join(ringCall, by: carol)

        assertCallError(.notAMember) { try h.invite(ringCall, ["erin"], by: dave) }
        XCTAssertTrue(h.last.isEmpty)
        XCTAssertNil(h.member("erin", of: ringCall))
    }
}
