import Foundation
import GRDB
import SwitchboardCore
import SwitchboardStore
import XCTest

/// What only the SQLite call store has: a database-level failure rolled back, a file that is
/// reopened, the `v6_calls` migration and its indexes. Everything the port promises is checked for
/// both implementations by `CallStoreContract`.
final class SQLiteStoreCallTests: XCTestCase, CallFixtures {
    private var directory: String!
    private var store: SQLiteStore!

    override func setUpWithError() throws {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("call-store-\(UUID().uuidString)", isDirectory: true)
        directory = url.path
        addTeardownBlock { try? FileManager.default.removeItem(at: url) }
        store = try SQLiteStore(configuration: StoreConfiguration(directory: directory))
    }

    override func tearDown() {
        store = nil
    }

    // MARK: - Atomicity

    /// A trigger installed through a second connection makes the batch's last insert fail in SQLite.
    /// Without the batch log (`store.fold_interval_ms` 0), where the commit is the tables' own
    /// transaction; with it, `BatchLogTests` shows a fold SQLite refuses keeping the batches.
    func test_aBatchWhoseLastMutationFailsInSQLiteChangesNothing() throws {
        store = try SQLiteStore(configuration: StoreConfiguration(directory: directory, foldInterval: .zero))
        try store.apply([.saveCall(call("c0")), .saveMember(member("c0", "alice"))])
        let raw = try DatabaseQueue(path: StoreConfiguration(directory: directory).databasePath)
        try raw.write { db in
            try db.execute(
                sql: """
                    CREATE TRIGGER refuse_boom BEFORE INSERT ON call_event WHEN NEW.type = 'boom'
                    BEGIN SELECT RAISE(ABORT, 'boom refused'); END
                    """)
        }
        try raw.close()

        var changed = call("c0")
        changed.session = 2
        var batch: [CallMutation] = [
            .saveCall(changed), .saveCall(call("c1")), .saveMember(member("c1", "bob")), .saveSession(session("s-1", "c1", "bob")),
            .saveConnection(connection("k-1")), .deleteConnection(ClientConnectionID("k-0")), .appendEvent(event("c1", 1)),
        ]
        var boom = event("c1", 2)
        boom.type = "boom"
        batch.append(.appendEvent(boom))

        assertSwitchboardError(.unavailable, try store.apply(batch))
        XCTAssertNil(try store.loadCall(cid("c1")))
        XCTAssertEqual(try store.loadCall(cid("c0"))?.call.session, 1)
        XCTAssertEqual(
            try store.loadLiveState(), CallStateSnapshot(calls: [call("c0")], members: [member("c0", "alice")]))

        // The same batch without the refused row commits whole.
        batch.removeLast()
        try store.apply(batch)
        XCTAssertEqual(try store.loadCall(cid("c0"))?.call.session, 2)
        XCTAssertEqual(try store.callDetail(cid("c1"), eventLimit: 10)?.events, [event("c1", 1)])
        XCTAssertEqual(try store.loadLiveState().connections, [connection("k-1")])
    }

    // MARK: - The file

    func test_committedStateSurvivesReopeningTheFile() throws {
        let batch: [CallMutation] = [
            .saveCall(call("c1", at: 1)), .saveCall(call("c2", at: 2, ended: true)), .saveMember(member("c1", "bob", state: .ringing)),
            .saveSession(session("s-1", "c1", "bob")), .appendEvent(event("c1", 1)), .appendEvent(event("c1", 2)),
            .saveConnection(connection("k-1", "bob")),
        ]
        try store.apply(batch)
        let before = try store.loadLiveState()
        let detailBefore = try store.callDetail(cid("c1"), eventLimit: 10)
        store = nil

        let reopened = try SQLiteStore(configuration: StoreConfiguration(directory: directory))
        XCTAssertEqual(try reopened.loadLiveState(), before)
        XCTAssertEqual(before.calls.map(\.cid.cid), ["default:c1"])
        XCTAssertEqual(try reopened.callDetail(cid("c1"), eventLimit: 10), detailBefore)
        XCTAssertEqual(detailBefore?.events.count, 2)
        XCTAssertEqual(try reopened.loadCall(cid("c2"))?.call, call("c2", at: 2, ended: true))
        // The event log continues after the reopened rows.
        try reopened.apply([.appendEvent(event("c1", 3))])
        XCTAssertEqual(try reopened.callDetail(cid("c1"), eventLimit: 10)?.events, [event("c1", 1), event("c1", 2), event("c1", 3)])
    }

    // MARK: - Migration

    func test_aFileAtV5IsUpgradedToV6AndKeepsItsSFURows() throws {
        store = nil
        let other = FileManager.default.temporaryDirectory.appendingPathComponent("call-store-v5-\(UUID().uuidString)", isDirectory: true)
        try FileManager.default.createDirectory(at: other, withIntermediateDirectories: true)
        addTeardownBlock { try? FileManager.default.removeItem(at: other) }
        let raw = try DatabaseQueue(path: StoreConfiguration(directory: other.path).databasePath)
        try SQLiteStore.migrate(raw, upTo: "v5_placement_sources")
        try raw.write { db in
            XCTAssertFalse(try db.tableExists("call"))
            try db.execute(
                sql: """
                    INSERT INTO sfu (id, url, region, latitude, longitude, capacity, weight, state, secret, reported_load, last_heartbeat_at)
                    VALUES ('sfu-a', 'wss://a/ws', 'fra', 50.1, 8.7, 100, 1.5, 'active', 's3cret', 7, ?)
                    """, arguments: [date(0)])
            try db.execute(
                sql: """
                    INSERT INTO call_placement (call_id, sfu_id, locations, sources, assigned_at, reason)
                    VALUES ('default:c1', 'sfu-a', '[]', 'rtt', ?, 'placed')
                    """, arguments: [date(1)])
        }
        try raw.close()

        let upgraded = try SQLiteStore(configuration: StoreConfiguration(directory: other.path))
        XCTAssertEqual(
            Array(SQLiteStore.knownMigrations.suffix(5)),
            ["v7_sfu_kinds", "v8_batch_log", "v9_call_number", "v10_webhooks", "v11_webhook_configured_digest"],
            "v7 gives every SFU row a kind (heartbeat)")
        XCTAssertEqual(try upgraded.appliedMigrations(), SQLiteStore.knownMigrations)
        XCTAssertEqual(
            try upgraded.allSFUs(),
            [
                SFURecord(
                    id: SFUID("sfu-a")!, url: "wss://a/ws", region: "fra", latitude: 50.1, longitude: 8.7, capacity: 100, weight: 1.5,
                    state: .active, secret: "s3cret", reportedLoad: 7, lastHeartbeatAt: date(0))
            ])
        XCTAssertEqual(
            try upgraded.allPlacements(),
            [PlacementRecord(callID: "default:c1", sfu: SFUID("sfu-a")!, locations: [], sources: [.rtt], assignedAt: date(1), reason: "placed")])
        try upgraded.apply([.saveCall(call("c1")), .saveMember(member("c1", "alice"))])
        XCTAssertEqual(try upgraded.loadCall(cid("c1"))?.members, [member("c1", "alice")])
        XCTAssertEqual(try upgraded.integrityCheck(), "ok")
    }

    /// The indexes of `v6_calls` as `v9_call_number` re-keyed them (SQLiteStoreCallNumberTests),
    /// and those of `v10_webhooks` (SQLiteStoreWebhookTests checks the queries use them).
    func test_theCallTablesHaveTheirIndexes() throws {
        let raw = try DatabaseQueue(path: StoreConfiguration(directory: directory).databasePath)
        defer { try? raw.close() }
        try raw.read { db in
            for table in [
                "call", "call_key", "call_member", "call_session", "call_event", "client_connection", "webhook_message", "webhook_delivery",
                "webhook_endpoint", "device",
            ] {
                XCTAssertTrue(try db.tableExists(table), table)
            }
            XCTAssertTrue(try db.columns(in: "call").contains { $0.name == "event_seq" && $0.isNotNull && $0.defaultValueSQL == "0" })
            let names = try String.fetchAll(
                db,
                sql: """
                    SELECT name FROM sqlite_master WHERE type = 'index' AND sql IS NOT NULL
                    AND tbl_name IN ('call', 'call_key', 'call_member', 'call_session', 'call_event', 'webhook_message', 'webhook_delivery',
                      'webhook_endpoint', 'device')
                    ORDER BY name
                    """)
            XCTAssertEqual(
                names,
                [
                    "call_event_on_call_no_seq", "call_key_on_cid", "call_member_on_user_id", "call_on_created_at_cid", "call_on_ended_at",
                    "call_on_type", "call_session_active", "call_session_on_call_no_joined_at", "device_on_user_id_created_at",
                    "webhook_delivery_on_created_at", "webhook_delivery_pending",
                ])
            let plan = try Row.fetchAll(db, sql: "EXPLAIN QUERY PLAN SELECT * FROM call_session WHERE left_at IS NULL ORDER BY joined_at")
                .map { row -> String in row["detail"] }.joined(separator: " ")
            XCTAssertTrue(plan.contains("call_session_active"), plan)
        }
    }
}
