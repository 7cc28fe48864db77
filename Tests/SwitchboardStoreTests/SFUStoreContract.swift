import Foundation
import SwitchboardCore
import SwitchboardPostgres
import SwitchboardStore
import SwitchboardTesting
import XCTest

/// What every ``SFUStore`` does, written once and run against the in-memory twin, the SQLite
/// store and the PostgreSQL store (the classes below): the SFU table, placements written by call
/// batches, failovers with their webhooks, the region table.
struct SFUStoreContract {
    /// A new empty store.
    let makeStore: () throws -> any SFUStore
    /// Commits a call batch's placement mutations (the call store's `apply`; the twin's `commit`).
    let commit: (any SFUStore, [CallMutation]) throws -> Void
    /// The messages pending in the outbox the store's failovers write to.
    let pendingMessages: (any SFUStore) throws -> [WebhookMessage]
    let regionCount: (any SFUStore) throws -> Int

    private func record(_ id: String, state: SFUNode.State = .active) -> SFURecord {
        SFURecord(
            id: SFUID(id)!, url: "wss://\(id)/ws", region: "fra", latitude: 50.1, longitude: 8.7, capacity: 100, weight: 1.5, state: state,
            secret: "s3cret-\(id)", reportedLoad: 7, lastHeartbeatAt: Date(timeIntervalSince1970: 1_800_000_000))
    }

    func anSFURecordRoundTripsAndUpsertsReplace() throws {
        let store = try makeStore()
        try store.saveSFU(record("a"))
        XCTAssertEqual(try store.allSFUs(), [record("a")])
        var changed = record("a")
        changed.capacity = 5
        changed.secret = nil
        changed.region = nil
        changed.lastHeartbeatAt = nil
        try store.saveSFU(changed)
        XCTAssertEqual(try store.allSFUs(), [changed])
        try store.saveSFU(record("B"))
        XCTAssertEqual(try store.allSFUs().map(\.id.rawValue), ["B", "a"], "by id, byte for byte")
        try store.deleteSFU(SFUID("a")!)
        XCTAssertEqual(try store.allSFUs(), [record("B")])
    }

    func aJanusSFURoundTripsWithItsAdminURLAndTheSecretsSourceButNoSecret() throws {
        let store = try makeStore()
        var janus = record("janus-a")
        janus.secret = nil
        janus.kind = .janus
        janus.janus = JanusAccess(adminURL: "http://10.0.0.5:7088/admin", adminSecret: .file("/run/secrets/janus-a"))
        try store.saveSFU(janus)
        try store.saveSFU(record("hb"))
        XCTAssertEqual(try store.allSFUs(), [record("hb"), janus])
        janus.janus = JanusAccess(adminURL: "https://janus-a.internal/admin", adminSecret: .environment("JANUS_A_SECRET"))
        try store.saveSFU(janus)
        XCTAssertEqual(try store.allSFUs().last, janus, "a replaced definition replaces the admin access")
    }

    func placementsRoundTripWithTheirLocationHints() throws {
        let store = try makeStore()
        let placement = PlacementRecord(
            callID: "default:c1", sfu: SFUID("a")!,
            locations: [LocationHint(rtt: ["a": 12.5, "sfu_b": 40]), LocationHint(latitude: 1, longitude: 2), LocationHint(region: "fra", ip: "10.0.0.1")],
            sources: [.rtt, .coordinates, .region], assignedAt: Date(timeIntervalSince1970: 1_800_000_000), reason: "placed", room: UInt64.max - 1)
        try commit(store, [.savePlacement(placement)])
        XCTAssertEqual(try store.allPlacements(), [placement])
        try commit(store, [.deletePlacement(CallCID(cid: "default:c1")!)])
        XCTAssertEqual(try store.allPlacements(), [])
    }

    func failoverMarksTheSFUDownAndMovesItsCallsTogether() throws {
        let store = try makeStore()
        try store.saveSFU(record("a"))
        try store.saveSFU(record("b"))
        let on = { (call: String, sfu: String, reason: String) in
            PlacementRecord(callID: call, sfu: SFUID(sfu)!, locations: [], assignedAt: Date(timeIntervalSince1970: 0), reason: reason)
        }
        try commit(store, [.savePlacement(on("c1", "a", "placed")), .savePlacement(on("c2", "a", "placed"))])
        let down = WebhookMessage(
            id: "msg_1", type: .sfuDown, createdAt: Date(timeIntervalSince1970: 1), lane: "sfu:a", seq: 1000, data: .object(["sfu_id": "a"]))
        try store.failover(
            down: SFUID("a")!, moves: [on("c1", "b", "failover"), on("c2", "b", "failover")], webhooks: [.enqueueWebhook(down, endpoints: ["ops"])])
        XCTAssertEqual(try store.allSFUs().first { $0.id.rawValue == "a" }?.state, .down)
        XCTAssertEqual(try store.allPlacements().map { "\($0.callID)@\($0.sfu)/\($0.reason)" }, ["c1@b/failover", "c2@b/failover"])
        XCTAssertEqual(try pendingMessages(store), [down], "its webhooks commit with it")
    }

    func theRegionTableIsReplacedWhole() throws {
        let store = try makeStore()
        try store.replaceRegions(RegionTable.builtin)
        XCTAssertEqual(try regionCount(store), RegionTable.builtin.regions.count)
        try store.replaceRegions(try RegionTable(csv: "code,name,kind,latitude,longitude\nxyz,Somewhere,city,1,2\n"))
        XCTAssertEqual(try regionCount(store), 1)
    }
}

/// One test per ``SFUStoreContract`` check, for each implementation.
protocol SFUStoreContractCases {
    func test_anSFURecordRoundTripsAndUpsertsReplace() throws
    func test_aJanusSFURoundTripsWithItsAdminURLAndTheSecretsSourceButNoSecret() throws
    func test_placementsRoundTripWithTheirLocationHints() throws
    func test_failoverMarksTheSFUDownAndMovesItsCallsTogether() throws
    func test_theRegionTableIsReplacedWhole() throws
}

final class InMemorySFUStoreContractTests: XCTestCase, SFUStoreContractCases {
    private let contract = SFUStoreContract(
        makeStore: {
            let store = InMemorySFUStore()
            store.outbox = InMemoryCallStore()
            return store
        },
        commit: { store, mutations in try (store as! InMemorySFUStore).commit(mutations) },
        pendingMessages: { store in try (store as! InMemorySFUStore).outbox!.pendingWebhooks().map(\.message) },
        regionCount: { store in (store as! InMemorySFUStore).regionCount })
    func test_anSFURecordRoundTripsAndUpsertsReplace() throws { try contract.anSFURecordRoundTripsAndUpsertsReplace() }
    func test_aJanusSFURoundTripsWithItsAdminURLAndTheSecretsSourceButNoSecret() throws {
        try contract.aJanusSFURoundTripsWithItsAdminURLAndTheSecretsSourceButNoSecret()
    }
    func test_placementsRoundTripWithTheirLocationHints() throws { try contract.placementsRoundTripWithTheirLocationHints() }
    func test_failoverMarksTheSFUDownAndMovesItsCallsTogether() throws { try contract.failoverMarksTheSFUDownAndMovesItsCallsTogether() }
    func test_theRegionTableIsReplacedWhole() throws { try contract.theRegionTableIsReplacedWhole() }
}

final class SQLiteSFUStoreContractTests: XCTestCase, SFUStoreContractCases {
    private var contract: SFUStoreContract {
        SFUStoreContract(
            makeStore: { [unowned self] in try SQLiteStore(configuration: StoreConfiguration(directory: try self.temporaryDirectory())) },
            commit: { store, mutations in try (store as! SQLiteStore).apply(mutations) },
            pendingMessages: { store in try (store as! SQLiteStore).pendingWebhooks().map(\.message) },
            regionCount: { store in try (store as! SQLiteStore).storedRegionCount() })
    }
    func test_anSFURecordRoundTripsAndUpsertsReplace() throws { try contract.anSFURecordRoundTripsAndUpsertsReplace() }
    func test_aJanusSFURoundTripsWithItsAdminURLAndTheSecretsSourceButNoSecret() throws {
        try contract.aJanusSFURoundTripsWithItsAdminURLAndTheSecretsSourceButNoSecret()
    }
    func test_placementsRoundTripWithTheirLocationHints() throws { try contract.placementsRoundTripWithTheirLocationHints() }
    func test_failoverMarksTheSFUDownAndMovesItsCallsTogether() throws { try contract.failoverMarksTheSFUDownAndMovesItsCallsTogether() }
    func test_theRegionTableIsReplacedWhole() throws { try contract.theRegionTableIsReplacedWhole() }
}

final class PostgresSFUStoreContractTests: XCTestCase, SFUStoreContractCases {
    private let contract = SFUStoreContract(
        makeStore: { try PostgresStore(configuration: try PostgresTestServer.running().database()) },
        commit: { store, mutations in try (store as! PostgresStore).apply(mutations) },
        pendingMessages: { store in try (store as! PostgresStore).pendingWebhooks().map(\.message) },
        regionCount: { store in try (store as! PostgresStore).storedRegionCount() })
    func test_anSFURecordRoundTripsAndUpsertsReplace() throws { try contract.anSFURecordRoundTripsAndUpsertsReplace() }
    func test_aJanusSFURoundTripsWithItsAdminURLAndTheSecretsSourceButNoSecret() throws {
        try contract.aJanusSFURoundTripsWithItsAdminURLAndTheSecretsSourceButNoSecret()
    }
    func test_placementsRoundTripWithTheirLocationHints() throws { try contract.placementsRoundTripWithTheirLocationHints() }
    func test_failoverMarksTheSFUDownAndMovesItsCallsTogether() throws { try contract.failoverMarksTheSFUDownAndMovesItsCallsTogether() }
    func test_theRegionTableIsReplacedWhole() throws { try contract.theRegionTableIsReplacedWhole() }
}
