import Foundation
import Logging
import SwitchboardApp
import SwitchboardCore
import SwitchboardTesting
import XCTest

/// A directory that follows the store (ADR 0012): the leader's directory takes heartbeats and
/// fails SFUs over; another node's, on the same store and clocks, sees what it wrote.
final class SFUDirectoryFollowingTests: XCTestCase {
    private let store = InMemorySFUStore()
    private let clock = ManualClock()
    private let wall = ManualWallClock(start: Date(timeIntervalSince1970: 1_800_000_000))

    private func directory() throws -> SFUDirectory {
        let wall = self.wall
        return try SFUDirectory(
            store: store, policy: PlacementPolicy(staleAfter: .seconds(10)),
            resolver: LocationResolver(regions: RegionTable.builtin.points, fallback: RegionTable.builtin.point(of: "fra")!),
            clock: clock, wallClock: { wall.now() }, logger: Logger(label: "test", factory: { _ in SwiftLogNoOpLogHandler() }))
    }

    private func advance(_ duration: Duration) {
        clock.advance(by: duration)
        wall.advance(by: duration)
    }

    func test_aFollowingDirectorySeesTheLeadersHeartbeatsLoadsAndFailovers() throws {
        let leader = try directory(), follower = try directory()
        XCTAssertEqual(follower.list().count, 0)
        for (id, region) in [("fra-1", "fra"), ("ams-1", "ams")] {
            _ = try leader.create(SFUDefinition(id: id, url: "wss://\(id).example/ws", region: region, capacity: 100, secret: "secret-secret-\(id)"))
        }
        _ = try leader.heartbeat(SFUID("fra-1")!, load: 40, credential: nil, isAdmin: true)
        advance(.seconds(4))
        _ = try leader.heartbeat(SFUID("ams-1")!, load: 7, credential: nil, isAdmin: true)

        try follower.refreshFromStore()
        let seen = Dictionary(uniqueKeysWithValues: follower.list().map { ($0.id, $0) })
        XCTAssertEqual(seen["fra-1"]?.load, 40)
        XCTAssertEqual(seen["ams-1"]?.load, 7)
        XCTAssertEqual(seen["fra-1"]?.fresh, true)
        let placed = try follower.place(callID: "default:c1", participants: [LocationHint(region: "muc")], commit: store.commit)
        XCTAssertEqual(placed.sfu.rawValue, "fra-1", "placed on the leader's view of health and load")
        XCTAssertNil(leader.placement(of: "default:c1"))
        XCTAssertFalse(leader.isFollowing)
        try leader.refreshPlacementsFromStore()
        XCTAssertEqual(leader.current(CallCID(cid: "default:c1")!)?.id, "fra-1", "the leader reads the placements other nodes made")
        XCTAssertEqual(leader.get(SFUID("fra-1")!)?.calls, 1)
        XCTAssertTrue(follower.isFollowing)

        // fra-1 falls silent: 11 s after its heartbeat it is stale; ams-1's is 7 s old.
        advance(.seconds(7))
        try follower.refreshFromStore()
        XCTAssertEqual(follower.get(SFUID("fra-1")!)?.fresh, false, "its stored heartbeat is older than stale_after")
        XCTAssertEqual(follower.get(SFUID("ams-1")!)?.fresh, true)
        XCTAssertEqual(follower.checkHealth().count, 0, "a follower never fails over itself")
        XCTAssertEqual(store.failoverCount, 0)

        let moves = leader.checkHealth()
        XCTAssertEqual(moves.map(\.callID), ["default:c1"], "the leader, which heard of the follower's placement from the store")
        try follower.refreshFromStore()
        XCTAssertEqual(follower.get(SFUID("fra-1")!)?.state, "down")
        XCTAssertEqual(follower.placement(of: "default:c1")?.sfu.rawValue, "ams-1")
        XCTAssertEqual(follower.placement(of: "default:c1")?.reason, "failover")
    }
}
