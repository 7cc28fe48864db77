import Foundation
import Logging
import SwitchboardApp
import SwitchboardCore
import SwitchboardTesting
import XCTest

/// The location table at run time, on the in-memory store twin and a manual clock.
final class SFUDirectoryTests: XCTestCase {
    private var store: InMemorySFUStore!
    private var clock: ManualClock!
    private var directory: SFUDirectory!

    override func setUp() {
        store = InMemorySFUStore()
        clock = ManualClock()
        directory = makeDirectory()
    }

    private func makeDirectory() -> SFUDirectory {
        try! SFUDirectory(
            store: store, policy: PlacementPolicy(staleAfter: .seconds(10)),
            resolver: LocationResolver(regions: RegionTable.builtin.points, fallback: RegionTable.builtin.point(of: "fra")!),
            clock: clock, wallClock: { Date(timeIntervalSince1970: 1_800_000_000) },
            logger: Logger(label: "test", factory: { _ in SwiftLogNoOpLogHandler() }))
    }

    private func add(_ id: String, region: String, capacity: Int = 100) throws {
        _ = try directory.create(SFUDefinition(id: id, url: "wss://\(id).example/ws", region: region, capacity: capacity, secret: "secret-secret-\(id)"))
        _ = try directory.heartbeat(SFUID(id)!, load: 0, credential: nil, isAdmin: true)
    }

    func test_aCallGoesToTheNearestHealthySFUAndStaysThere() throws {
        try add("fra-1", region: "fra")
        try add("sin-1", region: "sin")
        let first = try directory.place(callID: "c1", participants: [LocationHint(region: "muc")], commit: store.commit)
        XCTAssertEqual(first.sfu.rawValue, "fra-1")
        let again = try directory.place(callID: "c1", participants: [LocationHint(region: "sin")], commit: store.commit)
        XCTAssertEqual(again.sfu.rawValue, "fra-1", "one SFU per call: placement is sticky")
        XCTAssertEqual(try store.allPlacements().map(\.sfu.rawValue), ["fra-1"], "committed to the store")
        XCTAssertEqual(first.sources, [.region], "the source that located each participant is recorded")
    }

    func test_pendingAssignmentsCountAtOnceSoABurstCannotOverfillAnSFU() throws {
        try add("fra-1", region: "fra", capacity: 10)
        try add("ams-1", region: "ams", capacity: 10)
        var placed: [String: Int] = [:]
        for index in 0..<10 {
            let record = try directory.place(callID: "c\(index)", participants: [LocationHint(region: "fra"), LocationHint(region: "fra")], commit: store.commit)
            placed[record.sfu.rawValue, default: 0] += 2
        }
        XCTAssertEqual(placed, ["fra-1": 10, "ams-1": 10])
        XCTAssertThrowsError(try directory.place(callID: "c-over", participants: [LocationHint(region: "fra")], commit: store.commit)) { error in
            XCTAssertEqual((error as? SwitchboardError)?.code, .noSFUAvailable)
        }
        _ = try directory.heartbeat(SFUID("fra-1")!, load: 4, credential: "secret-secret-fra-1", isAdmin: false)
        XCTAssertEqual(try directory.place(callID: "c-after-report", participants: [LocationHint(region: "fra")], commit: store.commit).sfu.rawValue, "fra-1")
    }

    func test_anSFUWithoutAHeartbeatForStaleAfterIsMarkedDownAndItsCallsMoveInOneTransaction() throws {
        try add("fra-1", region: "fra")
        try add("ams-1", region: "ams")
        for index in 0..<3 { _ = try directory.place(callID: "c\(index)", participants: [LocationHint(region: "fra")], commit: store.commit) }
        clock.advance(by: .seconds(6))
        _ = try directory.heartbeat(SFUID("ams-1")!, load: 0, credential: nil, isAdmin: true)
        XCTAssertEqual(directory.checkHealth(), [], "within stale_after nothing happens")
        clock.advance(by: .seconds(5))
        let moves = directory.checkHealth()
        XCTAssertEqual(moves.map(\.callID), ["c0", "c1", "c2"])
        XCTAssertTrue(moves.allSatisfy { $0.from.rawValue == "fra-1" && $0.to?.rawValue == "ams-1" })
        XCTAssertEqual(store.failoverCount, 1)
        XCTAssertEqual(try store.allPlacements().map(\.reason), ["failover", "failover", "failover"])
        XCTAssertEqual(directory.get(SFUID("fra-1")!)?.state, "down")
    }

    func test_aDrainingSFUKeepsItsCallsButTakesNoNewOnes() throws {
        try add("fra-1", region: "fra")
        try add("sin-1", region: "sin")
        _ = try directory.place(callID: "old", participants: [LocationHint(region: "fra")], commit: store.commit)
        _ = try directory.drain(SFUID("fra-1")!)
        XCTAssertEqual(directory.placement(of: "old")?.sfu.rawValue, "fra-1")
        XCTAssertEqual(try directory.place(callID: "new", participants: [LocationHint(region: "fra")], commit: store.commit).sfu.rawValue, "sin-1")
    }

    func test_aStoreFailureIsA503AndChangesNothing() throws {
        try add("fra-1", region: "fra")
        store.setFailing(true)
        XCTAssertThrowsError(try directory.place(callID: "c", participants: [], commit: store.commit)) { error in
            XCTAssertEqual((error as? SwitchboardError)?.code, .unavailable)
        }
        XCTAssertNil(directory.placement(of: "c"))
        XCTAssertThrowsError(try directory.drain(SFUID("fra-1")!))
        XCTAssertEqual(directory.get(SFUID("fra-1")!)?.state, "active")
    }

    func test_theTableAndPlacementsAreReloadedFromTheStore() throws {
        try add("fra-1", region: "fra")
        _ = try directory.place(callID: "c", participants: [LocationHint(region: "fra")], commit: store.commit)
        directory = makeDirectory()
        XCTAssertEqual(directory.list().map(\.id), ["fra-1"])
        XCTAssertEqual(directory.placement(of: "c")?.sfu.rawValue, "fra-1")
        XCTAssertFalse(directory.get(SFUID("fra-1")!)?.fresh ?? true, "no heartbeat yet in this process")
    }

    func test_definitionsAreValidated() {
        let bad: [SFUDefinition] = [
            SFUDefinition(id: "x y", url: "wss://a", region: "fra", capacity: 1),
            SFUDefinition(id: "a", url: "http://a", region: "fra", capacity: 1),
            SFUDefinition(id: "a", url: "wss://a", region: "fra", capacity: 0),
            SFUDefinition(id: "a", url: "wss://a", region: "nowhere", capacity: 1),
            SFUDefinition(id: "a", url: "wss://a", latitude: 91, longitude: 0, capacity: 1),
            SFUDefinition(id: "a", url: "wss://a", capacity: 1),
            SFUDefinition(id: "a", url: "wss://a", region: "fra", capacity: 1, weight: 0),
            SFUDefinition(id: "a", url: "wss://a", region: "fra", capacity: 1, secret: "short"),
        ]
        for definition in bad {
            XCTAssertThrowsError(try directory.create(definition), "\(definition)") { error in
                XCTAssertEqual((error as? SwitchboardError)?.code, .invalidRequest)
            }
        }
        XCTAssertTrue(directory.list().isEmpty)
    }

    func test_creatingAnExistingIdIsAConflictButReplacingIsAllowed() throws {
        try add("fra-1", region: "fra")
        XCTAssertThrowsError(try directory.create(SFUDefinition(id: "fra-1", url: "wss://b", region: "fra", capacity: 5))) { error in
            XCTAssertEqual((error as? SwitchboardError)?.code, .conflict)
        }
        let replaced = try directory.replace(SFUID("fra-1")!, with: SFUDefinition(url: "wss://b", region: "ams", capacity: 5))
        XCTAssertEqual(replaced.url, "wss://b")
        XCTAssertEqual(replaced.region, "ams")
        XCTAssertTrue(replaced.fresh, "replacing a definition keeps the heartbeat")
    }

    func test_deletingAnSFUMovesItsCallsFirst() throws {
        try add("fra-1", region: "fra")
        try add("ams-1", region: "ams")
        _ = try directory.place(callID: "c", participants: [LocationHint(region: "fra")], commit: store.commit)
        let moves = try directory.delete(SFUID("fra-1")!)
        XCTAssertEqual(moves, [Reassignment(callID: "c", from: SFUID("fra-1")!, to: SFUID("ams-1")!)])
        XCTAssertNil(directory.get(SFUID("fra-1")!))
        XCTAssertEqual(try store.allSFUs().map(\.id.rawValue), ["ams-1"])
    }
}
