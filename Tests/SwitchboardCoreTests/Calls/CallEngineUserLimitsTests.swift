import Foundation
import SwitchboardCore
import XCTest

/// One user cannot grow the daemon without bound: calls created and members invited are rate
/// limited per user (admins exempt), refused requests change nothing, and buckets of users who
/// stopped leave memory.
final class CallEngineUserLimitsTests: XCTestCase {
    let alice = CallFixture.actor("alice")
    let mallory = CallFixture.actor("mallory")

    func test_callCreationIsRateLimitedPerUserAndARefusedCreationChangesNothing() throws {
        var h = EngineHarness(CallConfiguration(createsPerMinute: 60, createBurst: 3))
        for index in 0..<3 { try h.getOrCreate(CallFixture.cid("default", "m\(index)"), by: mallory) }
        assertCallError(.rateLimited) { try h.getOrCreate(CallFixture.cid("default", "m3"), by: mallory) }
        assertCallError(.rateLimited) { try h.join(CallFixture.cid("default", "m4"), by: mallory, create: true) }
        XCTAssertNil(h.call(CallFixture.cid("default", "m3")))
        XCTAssertNil(h.call(CallFixture.cid("default", "m4")))
        XCTAssertEqual(h.engine.liveCallCount, 3)

        // Another user has an allowance of their own; getting an existing call costs nothing.
        try h.getOrCreate(CallFixture.cid("default", "a0"), by: alice)
        try h.getOrCreate(CallFixture.cid("default", "m0"), by: mallory)
        // One a second comes back.
        h.advance(1.1)
        try h.getOrCreate(CallFixture.cid("default", "m5"), by: mallory)
        assertCallError(.rateLimited) { try h.getOrCreate(CallFixture.cid("default", "m6"), by: mallory) }
    }

    func test_adminsAreNotLimited() throws {
        var h = EngineHarness(CallConfiguration(createsPerMinute: 0, createBurst: 1))
        let admin = CallFixture.actor("ops", admin: true)
        for index in 0..<5 { try h.getOrCreate(CallFixture.cid("default", "a\(index)"), by: admin) }
        XCTAssertEqual(h.engine.liveCallCount, 5)
    }

    func test_invitesAreRateLimitedByMembersAddedAndARefusedInviteAddsNobody() throws {
        var h = EngineHarness(CallConfiguration(invitesPerMinute: 60, inviteBurst: 4))
        let cid = CallFixture.cid("default", "room")
        try h.getOrCreate(cid, by: mallory)
        _ = try h.invite(cid, ["v1", "v2", "v3"], by: mallory)
        assertCallError(.rateLimited) { _ = try h.invite(cid, ["v4", "v5"], by: mallory) }
        XCTAssertNil(h.member("v4", of: cid))
        XCTAssertNil(h.member("v5", of: cid))
        _ = try h.invite(cid, ["v1", "v4"], by: mallory)  // v1 is a member already: one token
        XCTAssertNotNil(h.member("v4", of: cid))
        assertCallError(.rateLimited) { _ = try h.invite(cid, ["v6"], by: mallory) }
    }
}
