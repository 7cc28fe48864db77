import Foundation
import SwitchboardCore
import SwitchboardStore
import XCTest

/// The location table, placements and regions in the real SQLite file.
final class SQLiteStoreSFUTests: XCTestCase {
    private var directory: URL!
    private var store: SQLiteStore!

    override func setUpWithError() throws {
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("sfu-store-\(UUID().uuidString)")
        store = try SQLiteStore(configuration: StoreConfiguration(directory: directory.path))
    }

    override func tearDown() {
        store = nil
        try? FileManager.default.removeItem(at: directory)
    }

    private func record(_ id: String, state: SFUNode.State = .active) -> SFURecord {
        SFURecord(
            id: SFUID(id)!, url: "wss://\(id)/ws", region: "fra", latitude: 50.1, longitude: 8.7, capacity: 100, weight: 1.5, state: state,
            secret: "s3cret-\(id)", reportedLoad: 7, lastHeartbeatAt: Date(timeIntervalSince1970: 1_800_000_000))
    }

    func test_anSFURecordRoundTripsAndUpsertsReplace() throws {
        try store.saveSFU(record("a"))
        XCTAssertEqual(try store.allSFUs(), [record("a")])
        var changed = record("a")
        changed.capacity = 5
        changed.secret = nil
        try store.saveSFU(changed)
        XCTAssertEqual(try store.allSFUs(), [changed])
        try store.deleteSFU(SFUID("a")!)
        XCTAssertEqual(try store.allSFUs(), [])
    }

    func test_aJanusSFURoundTripsWithItsAdminURLAndTheSecretsSourceButNoSecret() throws {
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

    func test_placementsRoundTripWithTheirLocationHints() throws {
        let placement = PlacementRecord(
            callID: "default:c1", sfu: SFUID("a")!,
            locations: [LocationHint(rtt: ["a": 12.5, "sfu_b": 40]), LocationHint(latitude: 1, longitude: 2), LocationHint(region: "fra", ip: "10.0.0.1")],
            sources: [.rtt, .coordinates, .region],
            assignedAt: Date(timeIntervalSince1970: 1_800_000_000), reason: "placed")
        try store.apply([.savePlacement(placement)])
        XCTAssertEqual(try store.allPlacements(), [placement])
        try store.apply([.deletePlacement(CallCID(cid: "default:c1")!)])
        XCTAssertEqual(try store.allPlacements(), [])
    }

    func test_failoverMarksTheSFUDownAndMovesItsCallsTogether() throws {
        try store.saveSFU(record("a"))
        try store.saveSFU(record("b"))
        let on = { (call: String, sfu: String, reason: String) in
            PlacementRecord(callID: call, sfu: SFUID(sfu)!, locations: [], assignedAt: Date(timeIntervalSince1970: 0), reason: reason)
        }
        try store.apply([.savePlacement(on("c1", "a", "placed")), .savePlacement(on("c2", "a", "placed"))])
        let down = WebhookMessage(
            id: "msg_1", type: .sfuDown, createdAt: Date(timeIntervalSince1970: 1), lane: "sfu:a", seq: 1000, data: .object(["sfu_id": "a"]))
        try store.failover(
            down: SFUID("a")!, moves: [on("c1", "b", "failover"), on("c2", "b", "failover")],
            webhooks: [.enqueueWebhook(down, endpoints: ["ops"])])
        XCTAssertEqual(try store.allSFUs().first { $0.id.rawValue == "a" }?.state, .down)
        XCTAssertEqual(try store.allPlacements().map { "\($0.callID)@\($0.sfu)/\($0.reason)" }, ["c1@b/failover", "c2@b/failover"])
        XCTAssertEqual(try store.pendingWebhooks().map(\.message), [down], "its webhooks commit with it")
    }

    func test_theRegionTableIsReplacedWhole() throws {
        try store.replaceRegions(RegionTable.builtin)
        XCTAssertEqual(try store.storedRegionCount(), RegionTable.builtin.regions.count)
        try store.replaceRegions(try RegionTable(csv: "code,name,kind,latitude,longitude\nxyz,Somewhere,city,1,2\n"))
        XCTAssertEqual(try store.storedRegionCount(), 1)
    }
}
