import Foundation
@testable import SwitchboardCore
import XCTest

/// `call.end`, the admin API's end and kick, empty calls, lost connections and eviction.
final class CallEngineEndTests: XCTestCase {
    let meeting = CallFixture.cid("default", "standup")
    let ringCall = CallFixture.cid("ringing", "c1")
    let alice = CallFixture.actor("alice")
    let bob = CallFixture.actor("bob")
    let carol = CallFixture.actor("carol")
    let dave = CallFixture.actor("dave")

    // MARK: call.end

    func test_onlyTheInitiatorOrAnAdminMayEnd() throws {
        var h = EngineHarness()
        try h.join(meeting, by: alice, create: true)
        try h.join(meeting, by: bob)

        assertCallError(.forbidden) { try h.end(meeting, by: bob) }
        XCTAssertTrue(h.last.isEmpty)
        XCTAssertTrue(h.call(meeting)!.record.isLive)

        let result = try h.end(meeting, by: CallFixture.actor("carol", admin: true))
        XCTAssertEqual(result["call"]?["ended_reason"], .string("ended_by_user"))
        XCTAssertEqual(h.call(meeting)?.record.endedReason, .endedByUser)
        assertCallError(.callEnded) { try h.end(meeting, by: alice) }
    }

    func test_callEndedGoesToParticipantsRingingDevicesAndTheInitiator() throws {
        var h = EngineHarness()
        try h.getOrCreate(ringCall, members: ["bob", "carol", "dave"], ring: true, by: alice)
        let carolSession = try h.join(ringCall, by: carol)
        try h.reject(ringCall, by: dave)
        h.advance(8)
        let result = try h.end(ringCall, by: alice)

        let ended = try XCTUnwrap(h.last.notice("call.ended"))
        XCTAssertEqual(ended.connections, [carol.connection])
        XCTAssertEqual(ended.users, [CallFixture.user("alice"), CallFixture.user("bob")])
        XCTAssertNil(ended.except)
        XCTAssertEqual(ended.string("reason"), "ended_by_user")
        XCTAssertEqual(ended.data["call"]?["ended_reason"], .string("ended_by_user"))
        XCTAssertEqual(h.member("bob", of: ringCall)?.ringState, .rejected)
        XCTAssertEqual(h.member("bob", of: ringCall)?.ringReason, .cancel)
        XCTAssertEqual(h.member("dave", of: ringCall)?.ringReason, .decline)
        XCTAssertEqual(h.member("carol", of: ringCall)?.ringState, .accepted)
        XCTAssertEqual(h.last.savedSessions.map(\.sessionID), [carolSession])
        XCTAssertEqual(h.last.savedSessions.first?.leftReason, "call_ended")
        XCTAssertEqual(h.last.savedSessions.first?.leftAt, CallFixture.at(8))
        XCTAssertEqual(h.last.releasedPlacements, [ringCall])
        XCTAssertTrue(h.last.mutations.contains(.deletePlacement(ringCall)), "the placement goes in the batch's own transaction")
        XCTAssertEqual(h.last.loggedEvents.last, "call.ended")
        XCTAssertEqual(h.last.metrics, [.ringOutcome("cancelled", answeredAfter: nil), .callEnded(.endedByUser)])
        XCTAssertEqual(result["participants"], .array([]))
        XCTAssertEqual(h.engine.sessionCount, 0)
        XCTAssertNil(h.engine.callOf(session: carolSession))
        XCTAssertTrue(h.engine.pendingRings(for: CallFixture.user("bob")).isEmpty)
        XCTAssertNil(h.engine.nextDeadline)
    }

    // MARK: Empty calls

    func test_anEmptyCallEndsAfterTheEmptyTimeout() throws {
        var h = EngineHarness()
        try h.getOrCreate(meeting, by: alice)
        XCTAssertEqual(h.engine.nextDeadline, CallFixture.at(300))
        h.advance(299)
        h.tick()
        XCTAssertTrue(h.last.isEmpty)

        h.advance(1)
        h.tick()
        let ended = try XCTUnwrap(h.last.notice("call.ended"))
        XCTAssertEqual(ended.string("reason"), "empty")
        XCTAssertEqual(ended.users, [CallFixture.user("alice")])
        XCTAssertTrue(ended.connections.isEmpty)
        XCTAssertEqual(h.call(meeting)?.record.endedReason, .empty)
        XCTAssertNil(h.call(meeting)?.record.emptyDeadline)
        XCTAssertNil(h.engine.nextDeadline)
    }

    func test_anEmptyTimerPushedBackByAJoinAndLeaveFiresAtItsNewTimeOnly() throws {
        var h = EngineHarness()
        try h.getOrCreate(meeting, by: alice)  // empty at 300
        h.advance(100)
        let session = try h.join(meeting, by: alice)
        XCTAssertNil(h.engine.nextDeadline, "occupied: no empty timer")
        h.advance(50)
        try h.leave(meeting, session: session, by: alice)  // empty again: at 450
        XCTAssertEqual(h.engine.nextDeadline, CallFixture.at(450))

        h.advance(150)  // 300, the first timer's old time
        h.tick()
        XCTAssertTrue(h.last.isEmpty, "the replaced timer does not fire")
        XCTAssertNil(h.call(meeting)?.record.endedReason)
        h.advance(150)
        h.tick()
        XCTAssertEqual(h.last.notice("call.ended")?.string("reason"), "empty")
    }

    func test_callsDueAtTheSameTickFireInCidOrderAndTheOthersWait() throws {
        var h = EngineHarness(CallConfiguration(createBurst: 1000))
        let names = (0..<300).map { String(format: "m%03d", ($0 * 7919) % 300) }
        for (index, name) in names.enumerated() {
            h.now = CallFixture.at(Double(index % 2))  // half are empty at 300, half at 301
            try h.getOrCreate(CallFixture.cid("default", name), by: alice)
        }
        h.now = CallFixture.at(300)
        h.tick()
        let ended = h.last.notices("call.ended").compactMap { $0.cid?.id }
        XCTAssertEqual(ended, ended.sorted())
        XCTAssertEqual(Set(ended), Set(names.enumerated().filter { $0.offset % 2 == 0 }.map(\.element)))
        XCTAssertEqual(h.engine.nextDeadline, CallFixture.at(301))
        h.now = CallFixture.at(301)
        h.tick()
        XCTAssertEqual(h.last.notices("call.ended").count, 150)
        XCTAssertNil(h.engine.nextDeadline)
    }

    func test_aRingingCallNobodyJoinedIsNotEmptyWhileItRings() throws {
        var h = EngineHarness()
        try h.getOrCreate(ringCall, members: ["bob"], ring: true, by: alice)
        XCTAssertNil(h.call(ringCall)?.record.emptyDeadline)
    }

    func test_anAcceptedCallThatNobodyJoinsEndsEmpty() throws {
        var h = EngineHarness()
        try h.getOrCreate(ringCall, members: ["bob"], ring: true, by: alice)
        h.advance(5)
        try h.accept(ringCall, by: bob)
        XCTAssertEqual(h.call(ringCall)?.record.emptyDeadline, CallFixture.at(65))
        XCTAssertEqual(h.engine.nextDeadline, CallFixture.at(65))

        h.advance(60)
        h.tick()
        XCTAssertEqual(h.call(ringCall)?.record.endedReason, .empty)
        XCTAssertEqual(h.last.notice("call.ended")?.string("reason"), "empty")
    }

    func test_whenTheLastRingEndsAfterAnAcceptAnEmptyCallArmsItsTimerOnce() throws {
        var h = EngineHarness()
        try h.getOrCreate(ringCall, members: ["bob", "carol"], ring: true, by: alice)
        try h.accept(ringCall, by: bob)
        XCTAssertNil(h.call(ringCall)?.record.emptyDeadline, "carol is still ringing")

        h.advance(30)
        h.tick()
        XCTAssertEqual(h.member("carol", of: ringCall)?.ringState, .missed)
        XCTAssertEqual(h.call(ringCall)?.record.emptyDeadline, CallFixture.at(90))

        h.advance(30)
        h.tick()
        XCTAssertTrue(h.last.isEmpty, "a later tick must not push the deadline: \(h.last.mutations)")
        XCTAssertEqual(h.call(ringCall)?.record.emptyDeadline, CallFixture.at(90))
        h.advance(30)
        h.tick()
        XCTAssertEqual(h.call(ringCall)?.record.endedReason, .empty)
    }

    func test_anAcceptedCallWithParticipantsHasNoEmptyTimer() throws {
        var h = EngineHarness()
        try h.join(ringCall, by: alice, create: true, ring: true, members: ["bob"])
        try h.accept(ringCall, by: bob)
        XCTAssertNil(h.call(ringCall)?.record.emptyDeadline)
        h.advance(3600)
        h.tick()
        XCTAssertTrue(h.call(ringCall)!.record.isLive)
    }

    // MARK: Admin

    func test_theAdminAPIEndsWithReasonAdmin() throws {
        var h = EngineHarness()
        try h.join(meeting, by: alice, create: true)
        let result = try h.endByAdmin(meeting)
        XCTAssertEqual(result["call"]?["ended_reason"], .string("admin"))
        XCTAssertEqual(h.last.notice("call.ended")?.string("reason"), "admin")
        XCTAssertEqual(h.last.notice("call.ended")?.connections, [alice.connection])
        XCTAssertEqual(h.call(meeting)?.record.endedReason, .admin)
        XCTAssertTrue(h.last.metrics.contains(.callEnded(.admin)))

        assertCallError(.callEnded) { try h.endByAdmin(meeting) }
        assertCallError(.callNotFound) { try h.endByAdmin(CallFixture.cid("default", "nope")) }
        XCTAssertTrue(h.last.isEmpty)
    }

    func test_kickRemovesOneSessionWithReasonKicked() throws {
        var h = EngineHarness()
        try h.join(meeting, by: alice, create: true)
        let bobSession = try h.join(meeting, by: bob)
        h.advance(2)
        try h.kick(bobSession, from: meeting)

        let saved = try XCTUnwrap(h.last.savedSessions.first)
        XCTAssertEqual(saved.sessionID, bobSession)
        XCTAssertEqual(saved.leftReason, "kicked")
        XCTAssertEqual(saved.leftAt, CallFixture.at(2))
        let left = try XCTUnwrap(h.last.notice("call.participant_left"))
        XCTAssertEqual(left.connections, [alice.connection, bob.connection], "the kicked client hears of it too")
        XCTAssertEqual(left.data["participant"]?["reason"], .string("kicked"))
        XCTAssertEqual(left.data["participant"]?["user_id"], .string("bob"))
        XCTAssertTrue(h.engine.sessions(of: bob.connection).isEmpty)
        XCTAssertTrue(h.call(meeting)!.record.isLive)

        assertCallError(.sessionNotFound) { try h.kick(bobSession, from: meeting) }
        XCTAssertTrue(h.last.isEmpty)
        let aliceSession = try XCTUnwrap(h.engine.sessions(of: alice.connection).first)
        assertCallError(.sessionNotFound) { try h.kick(aliceSession, from: CallFixture.cid("default", "other")) }
    }

    func test_kickingTheInitiatorOfARingingCallEndsItInitiatorLeft() throws {
        var h = EngineHarness()
        let aliceSession = try h.join(ringCall, by: alice, create: true, ring: true, members: ["bob"])
        try h.join(ringCall, by: bob)
        try h.kick(aliceSession, from: ringCall)
        XCTAssertEqual(h.call(ringCall)?.record.endedReason, .initiatorLeft)
        XCTAssertEqual(h.last.notice("call.ended")?.connections, [bob.connection])
    }

    // MARK: Lost connections, SFU moves, eviction

    func test_aLostConnectionLeavesEveryOneOfItsSessions() throws {
        var h = EngineHarness()
        let other = CallFixture.cid("default", "other")
        try h.join(meeting, by: alice, create: true)
        try h.join(other, by: alice, create: true)
        try h.join(meeting, by: bob)
        h.last = CallOutput()
        h.engine.connectionLost(alice.connection, now: h.now, out: &h.last)

        XCTAssertEqual(h.last.savedSessions.map(\.leftReason), ["connection_lost", "connection_lost"])
        XCTAssertEqual(
            h.last.notices("call.participant_left").map(\.connections), [[bob.connection, alice.connection], [alice.connection]],
            "the lost connection's own buffer keeps the news for a late resume")
        XCTAssertTrue(h.engine.sessions(of: alice.connection).isEmpty)
        XCTAssertEqual(h.engine.sessionCount, 1)
        XCTAssertEqual(h.call(other)?.record.emptyDeadline, CallFixture.at(300))
    }

    func test_anSFUMoveIsAnnouncedToTheParticipants() throws {
        var h = EngineHarness()
        try h.join(meeting, by: alice, create: true)
        let moved = SFUAssignment(id: "sfu-ams-1", url: "wss://sfu-ams-1.example/sfu", region: "ams")
        h.last = CallOutput()
        h.engine.sfuChanged(meeting, to: moved, now: h.now, out: &h.last)
        let notice = try XCTUnwrap(h.last.notice("call.sfu_changed"))
        XCTAssertEqual(notice.connections, [alice.connection])
        XCTAssertEqual(notice.data["sfu"]?["id"], .string("sfu-ams-1"))
        XCTAssertEqual(h.call(meeting)?.sfu, moved)
    }

    func test_anEndedCallIsEvictedAfterTheRetention() throws {
        var h = EngineHarness()
        try h.join(meeting, by: alice, create: true)
        try h.end(meeting, by: alice)
        h.advance(CallEngine.endedRetention)
        h.tick()
        XCTAssertNotNil(h.call(meeting))
        h.advance(0.5)
        h.tick()
        XCTAssertNil(h.call(meeting))
        XCTAssertTrue(h.last.isEmpty)
    }

    func test_evictingABurstOfCallsGivesTheirTablesStorageBack() throws {
        var h = EngineHarness()
        let admin = CallFixture.actor("ops", admin: true)  // exempt from the per-user creation limit
        for index in 0..<3000 { try h.join(CallFixture.cid("default", "burst-\(index)"), by: admin, create: true) }
        XCTAssertGreaterThanOrEqual(h.engine.calls.capacity, 3000)
        for index in 0..<3000 { try h.endByAdmin(CallFixture.cid("default", "burst-\(index)")) }
        try h.join(meeting, by: alice, create: true)
        h.advance(CallEngine.endedRetention + 1)
        h.tick()

        XCTAssertEqual(h.engine.calls.count, 1, "the live call stays; the 3,000 ended ones are gone")
        XCTAssertNotNil(h.call(meeting))
        // Tables shrink while large (over 1,024 slots) and at most a quarter full.
        XCTAssertLessThanOrEqual(h.engine.calls.capacity, 1024, "the table gave back the burst's storage")
        XCTAssertLessThanOrEqual(h.engine.sessionCalls.capacity, 1024)
        XCTAssertLessThanOrEqual(h.engine.deadlines.capacity, 1024)
    }
}
