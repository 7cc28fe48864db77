import Foundation
import SwitchboardCore
import XCTest

/// Answers that cross (two devices of one callee, the caller and a callee), and a restart
/// with deadlines that passed while the daemon was down.
final class CallEngineRaceTests: XCTestCase {
    let call = CallFixture.cid("ringing", "c1")
    let alice = CallFixture.actor("alice")
    let bobPhone = CallFixture.actor("bob", device: "phone")
    let bobLaptop = CallFixture.actor("bob", device: "laptop")
    let carol = CallFixture.actor("carol")

    private func ringing(_ members: [String]) throws -> EngineHarness {
        var h = EngineHarness()
        try h.getOrCreate(call, members: members, ring: true, by: alice)
        return h
    }

    // MARK: Two devices of the same callee

    func test_acceptOnOneDeviceThenRejectOnAnotherIsAConflictAndTheAcceptStands() throws {
        var h = try ringing(["bob"])
        try h.accept(call, by: bobPhone)
        let before = h.call(call)

        assertCallError(.conflict) { try h.reject(call, reason: .decline, by: bobLaptop) }
        XCTAssertTrue(h.last.isEmpty)
        XCTAssertEqual(h.call(call), before)
        XCTAssertEqual(h.member("bob", of: call)?.ringState, .accepted)
        XCTAssertNil(h.member("bob", of: call)?.ringReason)
    }

    func test_acceptOnTwoDevicesIsAConflictForTheSecond() throws {
        var h = try ringing(["bob"])
        try h.accept(call, by: bobPhone)
        assertCallError(.conflict) { try h.accept(call, by: bobLaptop) }
        XCTAssertTrue(h.last.isEmpty)
        XCTAssertEqual(h.member("bob", of: call)?.ringState, .accepted)
    }

    func test_rejectOnOneDeviceThenAcceptOnAnotherIsAConflictAndTheRejectStands() throws {
        var h = try ringing(["bob", "carol"])
        try h.reject(call, reason: .decline, by: bobPhone)
        let before = h.call(call)

        assertCallError(.conflict) { try h.accept(call, by: bobLaptop) }
        XCTAssertTrue(h.last.isEmpty)
        XCTAssertEqual(h.call(call), before)
        XCTAssertEqual(h.member("bob", of: call)?.ringState, .rejected)
        XCTAssertEqual(h.member("bob", of: call)?.ringReason, .decline)
    }

    func test_inAOneToOneCallAnAcceptAfterTheRejectFindsTheCallEnded() throws {
        var h = try ringing(["bob"])
        try h.reject(call, reason: .decline, by: bobPhone)
        assertCallError(.callEnded) { try h.accept(call, by: bobLaptop) }
        XCTAssertTrue(h.last.isEmpty)
        XCTAssertEqual(h.member("bob", of: call)?.ringState, .rejected)
        XCTAssertEqual(h.call(call)?.record.endedReason, .allRejected)
    }

    func test_joiningOnAnotherDeviceAfterARejectDoesNotTurnItIntoAnAccept() throws {
        var h = try ringing(["bob", "carol"])
        try h.reject(call, reason: .decline, by: bobPhone)
        try h.join(call, by: bobLaptop)
        XCTAssertEqual(h.member("bob", of: call)?.ringState, .rejected)
        XCTAssertTrue(h.last.notices("call.accepted").isEmpty)
    }

    // MARK: The caller cancels while a callee accepts

    func test_cancelThenAcceptLeavesTheCallCancelled() throws {
        var h = try ringing(["bob"])
        try h.reject(call, reason: .cancel, by: alice)
        assertCallError(.callEnded) { try h.accept(call, by: bobPhone) }
        XCTAssertTrue(h.last.isEmpty)
        XCTAssertEqual(h.member("bob", of: call)?.ringState, .rejected)
        XCTAssertEqual(h.member("bob", of: call)?.ringReason, .cancel)
        XCTAssertEqual(h.call(call)?.record.endedReason, .cancelled)
    }

    func test_acceptThenCancelIsAConflictAndTheCallGoesOn() throws {
        var h = try ringing(["bob"])
        try h.accept(call, by: bobPhone)
        assertCallError(.conflict) { try h.reject(call, reason: .cancel, by: alice) }
        XCTAssertTrue(h.last.isEmpty)
        XCTAssertEqual(h.member("bob", of: call)?.ringState, .accepted)
        XCTAssertTrue(h.call(call)!.record.isLive)
    }

    func test_cancelThenJoinByTheCalleeReopensWithoutAnAccept() throws {
        var h = try ringing(["bob"])
        try h.reject(call, reason: .cancel, by: alice)
        let result = try h.joinResult(call, by: bobPhone)
        XCTAssertEqual(result["call"]?["session"], .number(2))
        XCTAssertEqual(h.member("bob", of: call)?.ringState, .rejected)
        XCTAssertTrue(h.last.notices("call.accepted").isEmpty)
    }

    // MARK: Restart

    /// alice rang bob 100 s ago; bob's ring ran out 70 s ago, while the daemon was down.
    private func snapshot(ringDeadline: Date, autoCancelAt: Date) -> CallStateSnapshot {
        let record = CallRecord(cid: call, createdBy: CallFixture.user("alice"), createdAt: CallFixture.at(-100), rung: true, autoCancelAt: autoCancelAt)
        let members = [
            MemberRecord(cid: call, userID: CallFixture.user("alice"), addedAt: CallFixture.at(-100)),
            MemberRecord(
                cid: call, userID: CallFixture.user("bob"), addedAt: CallFixture.at(-100), ringState: .ringing, ringUpdatedAt: CallFixture.at(-100),
                ringDeadline: ringDeadline),
        ]
        let session = SessionRecord(
            sessionID: SessionID("s-alice"), cid: call, callSession: 1, userID: CallFixture.user("alice"), connection: alice.connection,
            role: .initiator, joinedAt: CallFixture.at(-100))
        return CallStateSnapshot(calls: [record], members: members, sessions: [session])
    }

    func test_aRingDeadlineThatPassedWhileDownFiresAtTheFirstTick() throws {
        var h = EngineHarness()
        h.engine.restore(snapshot(ringDeadline: CallFixture.at(-70), autoCancelAt: CallFixture.at(-70)))
        XCTAssertEqual(h.engine.nextDeadline, CallFixture.at(-70))
        XCTAssertEqual(h.engine.callOf(session: SessionID("s-alice")), call)

        h.tick()
        let bob = try XCTUnwrap(h.member("bob", of: call))
        XCTAssertEqual(bob.ringState, .missed)
        XCTAssertEqual(bob.ringUpdatedAt, CallFixture.base)
        XCTAssertEqual(h.last.notice("call.ring_stopped")?.users, [CallFixture.user("bob")])
        XCTAssertEqual(h.last.notice("call.missed")?.users, [CallFixture.user("alice")])
        let ended = try XCTUnwrap(h.last.notice("call.ended"))
        XCTAssertEqual(ended.string("reason"), "no_answer")
        XCTAssertEqual(ended.connections, [alice.connection])
        XCTAssertEqual(h.call(call)?.record.endedReason, .noAnswer)
        XCTAssertEqual(h.call(call)?.record.endedAt, CallFixture.base)
        XCTAssertEqual(h.last.savedSessions.map(\.leftReason), ["call_ended"])
        XCTAssertEqual(h.engine.sessionCount, 0)
        XCTAssertTrue(h.engine.pendingRings(for: CallFixture.user("bob")).isEmpty)
    }

    func test_aPassedAutoCancelFiresAtTheFirstTickEvenWhenTheRingDeadlineIsLater() throws {
        var h = EngineHarness()
        h.engine.restore(snapshot(ringDeadline: CallFixture.at(20), autoCancelAt: CallFixture.at(-5)))
        h.tick()
        XCTAssertEqual(h.member("bob", of: call)?.ringState, .missed)
        XCTAssertEqual(h.call(call)?.record.endedReason, .noAnswer)
        XCTAssertEqual(h.last.notices("call.missed").count, 1)
    }

    func test_aRestoredRingThatHasNotRunOutKeepsRingingAndWaits() throws {
        var h = EngineHarness()
        h.engine.restore(snapshot(ringDeadline: CallFixture.at(12), autoCancelAt: CallFixture.at(15)))
        XCTAssertEqual(h.engine.nextDeadline, CallFixture.at(12))
        XCTAssertEqual(h.engine.pendingRings(for: CallFixture.user("bob")).map(\.cid), [call])
        h.tick()
        XCTAssertTrue(h.last.isEmpty)
        XCTAssertEqual(h.member("bob", of: call)?.ringState, .ringing)

        try h.accept(call, by: bobPhone)
        XCTAssertEqual(h.member("bob", of: call)?.ringState, .accepted)
        XCTAssertEqual(h.last.notice("call.accepted")?.connections, [alice.connection])
    }

    func test_restoredSessionsCountForBusyDetection() throws {
        var h = EngineHarness()
        h.engine.restore(snapshot(ringDeadline: CallFixture.at(12), autoCancelAt: CallFixture.at(15)))
        let other = CallFixture.cid("ringing", "c2")
        try h.getOrCreate(other, members: ["alice"], ring: true, by: carol)
        XCTAssertEqual(h.member("alice", of: other)?.ringReason, .busy)
    }

    func test_restoreDropsSessionsOfAnEarlierCallSession() {
        var h = EngineHarness()
        var state = snapshot(ringDeadline: CallFixture.at(12), autoCancelAt: CallFixture.at(15))
        state.calls[0].session = 2
        h.engine.restore(state)
        XCTAssertEqual(h.engine.sessionCount, 0)
        XCTAssertNil(h.engine.callOf(session: SessionID("s-alice")))
        XCTAssertEqual(h.call(call)?.sessions.count, 0)
    }
}
