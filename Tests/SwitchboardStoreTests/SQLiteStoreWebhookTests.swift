import Foundation
import GRDB
import SwitchboardCore
@testable import SwitchboardStore
import XCTest

/// What only the SQLite store has of migration `v10_webhooks`: the file kept across a restart,
/// batch log records of the previous version, coalesced folds and the queries' indexes.
/// Everything `WebhookStore` promises is checked for both implementations by `CallStoreContract`.
final class SQLiteStoreWebhookTests: XCTestCase, CallFixtures {
    /// A store whose folder never runs on its own during a test: folds happen only before reads.
    private func store(_ directory: String, foldInterval: Duration = .seconds(3600), migrate: Bool = true) throws -> SQLiteStore {
        try SQLiteStore(configuration: StoreConfiguration(directory: directory, foldInterval: foldInterval), migrate: migrate)
    }

    private func message(_ id: String, lane: String = "default:c1", seq: Int64 = 1, at offset: Int = 0) -> WebhookMessage {
        WebhookMessage(id: id, type: .callEnded, createdAt: date(offset), lane: lane, seq: seq, data: .object(["reason": .string("admin")]))
    }

    /// Appends `batches` to the batch log of `directory` as a daemon would, through the log's own
    /// writer (rows as given, whatever their arity).
    private func appendToTheLog(_ directory: String, foldedThrough: UInt64 = 0, _ batches: [[StoredRow]]) throws {
        let log = try BatchLog(
            directory: StoreConfiguration(directory: directory).batchLogDirectory, foldedThrough: foldedThrough, syncEveryAppend: false)
        for batch in batches { try log.append(batch) }
    }

    /// A `.call` row as the previous version wrote it: without `event_seq`.
    private func previousVersionRow(_ record: CallRecord) throws -> StoredRow {
        let row = try StoredRow(.saveCall(record))
        XCTAssertEqual(row.values.count, 13)
        return StoredRow(kind: .call, values: Array(row.values.dropLast()))
    }

    // MARK: - Restart

    /// Whether the last batches were folded (a clean stop) or are still in the log (a crash), and
    /// with no log at all, the outbox, endpoint state, devices and call sequences are all there
    /// after the file is opened again.
    func test_theOutboxEndpointsDevicesAndSequencesSurviveARestart() throws {
        for (label, interval, foldFirst) in [("log, crashed", Duration.seconds(3600), false), ("log, folded", .seconds(3600), true), ("direct", .zero, false)] {
            let directory = try temporaryDirectory()
            var first: SQLiteStore? = try store(directory, foldInterval: interval)
            var numbered = call("c1")
            numbered.eventSeq = 3
            var failed = WebhookDelivery(message("msg_3", seq: 3, at: 3), endpoint: "ops")
            failed.attempts = 1
            failed.lastStatus = 500
            failed.lastAttemptAt = date(4)
            failed.nextAttemptAt = date(10)
            let phone = DeviceRecord(userID: user("bob"), provider: .apnsVoIP, token: "voip-1", createdAt: date(1))
            let state = WebhookEndpointState(name: "ops", secret: "whsec_2", previousSecret: "whsec_1", previousUntil: date(86_400))
            try first?.apply([
                .saveCall(numbered), .enqueueWebhook(message("msg_2", seq: 2, at: 2), endpoints: ["ops", "billing"]),
                .saveDevice(phone), .saveWebhookEndpoint(state),
            ])
            try first?.apply([.enqueueWebhook(message("msg_3", seq: 3, at: 3), endpoints: ["ops"]), .saveWebhookDelivery(failed)])
            if foldFirst { try first?.fold() }
            XCTAssertEqual(first?.foldStats.pendingBatches, interval == .zero || foldFirst ? 0 : 2, label)
            first = nil

            let reopened = try store(directory, foldInterval: interval)
            let (second, third) = (message("msg_2", seq: 2, at: 2), message("msg_3", seq: 3, at: 3))
            XCTAssertEqual(
                try reopened.pendingWebhooks(),
                [
                    PendingWebhook(delivery: WebhookDelivery(second, endpoint: "billing"), message: second),
                    PendingWebhook(delivery: WebhookDelivery(second, endpoint: "ops"), message: second),
                    PendingWebhook(delivery: failed, message: third),
                ], label)
            XCTAssertEqual(try reopened.webhook(messageID: "msg_3", endpoint: "ops")?.delivery, failed, label)
            XCTAssertEqual(try reopened.listDeliveries(WebhookDeliveryQuery(endpoint: "billing")).deliveries.map(\.messageID), ["msg_2"], label)
            XCTAssertEqual(try reopened.webhookEndpointStates(), [state], label)
            XCTAssertEqual(try reopened.devices(of: user("bob")), [phone], label)
            XCTAssertEqual(try reopened.loadLiveState().devices, [phone], label)
            XCTAssertEqual(try reopened.loadLiveState().calls, [numbered], label)
            XCTAssertEqual(try reopened.loadCall(cid("c1"))?.call.eventSeq, 3, label)
        }
    }

    // MARK: - Folding

    /// Each attempt's outcome replaces the delivery row: a fold writes its last row once, and the
    /// message once however often it was enqueued.
    func test_deliveryUpdatesCoalesceInAFold() throws {
        let store = try store(try temporaryDirectory())
        let sent = message("msg_1")
        try store.apply([.enqueueWebhook(sent, endpoints: ["ops", "billing"])])
        var delivery = WebhookDelivery(sent, endpoint: "ops")
        for attempt in 1...5 {
            delivery.attempts = attempt
            delivery.lastStatus = attempt == 5 ? 200 : 502
            delivery.status = attempt == 5 ? .delivered : .pending
            try store.apply([.saveWebhookDelivery(delivery)])
        }
        try store.apply([.enqueueWebhook(sent, endpoints: [])])
        try store.fold()
        XCTAssertEqual(store.foldStats.batches, 7)
        XCTAssertEqual(store.foldStats.rows, 2 + 2, "two inserts of the message (the second does nothing) and one row per delivery")
        XCTAssertEqual(try store.webhook(messageID: "msg_1", endpoint: "ops")?.delivery, delivery)
        XCTAssertEqual(delivery.attempts, 5)
        XCTAssertEqual(try store.pendingWebhooks().map(\.delivery.endpoint), ["billing"])
    }

    // MARK: - The previous version's batch log

    func test_aCallRowOfThePreviousVersionDecodesAsItIsAndOtherAritiesAreRefused() throws {
        let old = try previousVersionRow(call("c1"))
        XCTAssertEqual(BatchCodec.decode(BatchCodec.encode([old])), [old])
        XCTAssertEqual(old.sql, StoredRow.Kind.callStatementBeforeEventSeq)
        XCTAssertFalse(old.sql.contains("event_seq"))
        XCTAssertTrue(try StoredRow(.saveCall(call("c1"))).sql.contains("event_seq"))
        XCTAssertEqual(old.key, try StoredRow(.saveCall(call("c1"))).key, "both versions' rows of one call coalesce")

        let short = StoredRow(kind: .call, values: Array(old.values.dropLast()))
        XCTAssertNil(BatchCodec.decode(BatchCodec.encode([short])), "no version wrote 11 values")
        let member = try StoredRow(.saveMember(member("c1", "bob")))
        XCTAssertNil(BatchCodec.decode(BatchCodec.encode([StoredRow(kind: .member, values: Array(member.values.dropLast()))])))
        let device = try StoredRow(.saveDevice(DeviceRecord(userID: user("bob"), provider: .fcm, token: "t", createdAt: date(0))))
        XCTAssertNil(BatchCodec.decode(BatchCodec.encode([StoredRow(kind: .device, values: device.values + [.null])])))
    }

    /// A daemon of the previous version committed and crashed; this build opens the file: the
    /// records fold, a new call gets `event_seq` 0 and an existing call keeps its own.
    func test_aBatchLogOfThePreviousVersionFoldsAtOpen() throws {
        let directory = try temporaryDirectory()
        var numbered = call("c0")
        numbered.eventSeq = 9
        // Written directly, so no segment is folded yet and the log starts again at 1.
        try store(directory, foldInterval: .zero).apply([.saveCall(numbered)])
        var reopened = call("c0")
        reopened.session = 2
        try appendToTheLog(directory, [
            [try previousVersionRow(call("c1", at: 5)), try StoredRow(.saveMember(member("c1", "bob")))],
            [try previousVersionRow(reopened)],
        ])

        let store = try store(directory)
        XCTAssertEqual(store.foldStats.batches, 2, "folded at open")
        XCTAssertEqual(try store.loadCall(cid("c1"))?.call, call("c1", at: 5))
        XCTAssertEqual(try store.loadCall(cid("c1"))?.members, [member("c1", "bob")])
        numbered.session = 2
        XCTAssertEqual(try store.loadCall(cid("c0"))?.call, numbered, "the old row changes its session, not its event_seq")
        // And this build's rows for the same call, after the old ones, set it.
        numbered.eventSeq = 10
        try store.apply([.saveCall(numbered)])
        XCTAssertEqual(try store.loadCall(cid("c0"))?.call.eventSeq, 10)
    }

    /// `switchboard migrate` opens the store without migrating it, which folds the log into the
    /// v9 tables, then migrates: the previous version's rows fold before `event_seq` exists.
    func test_aV9FileWithAPendingLogIsFoldedThenMigrated() throws {
        let directory = try temporaryDirectory()
        let raw = try DatabaseQueue(path: StoreConfiguration(directory: directory).databasePath)
        try SQLiteStore.migrate(raw, upTo: "v9_call_number")
        try raw.close()
        try appendToTheLog(directory, [[try previousVersionRow(call("c1")), try StoredRow(.appendEvent(event("c1", 1)))]])

        let store = try store(directory, migrate: false)
        XCTAssertEqual(store.foldStats.batches, 1)
        XCTAssertEqual(try store.migrate(), ["v10_webhooks", "v11_webhook_configured_digest"])
        XCTAssertEqual(try store.appliedMigrations(), SQLiteStore.knownMigrations)
        XCTAssertEqual(try store.loadCall(cid("c1"))?.call, call("c1"))
        XCTAssertEqual(try store.callDetail(cid("c1"), eventLimit: 5)?.events, [event("c1", 1)])
        try store.apply([.enqueueWebhook(message("msg_1"), endpoints: ["ops"])])
        XCTAssertEqual(try store.pendingWebhooks().map(\.message.id), ["msg_1"])
        XCTAssertEqual(try store.integrityCheck(), "ok")
    }

    /// An endpoint row of a version before `v11_webhook_configured_digest` (5 values, in a
    /// crashed daemon's log) folds into a v10 file, and after the migration reads back with no
    /// digest; this build's rows of the same endpoint coalesce with it and set the digest.
    func test_anEndpointRowOfThePreviousVersionFoldsBeforeAndAfterTheMigration() throws {
        let rotated = WebhookEndpointState(
            name: "ops", secret: "whsec_new", previousSecret: "whsec_old", previousUntil: date(60), configuredDigest: "d1")
        let row = try StoredRow(.saveWebhookEndpoint(rotated))
        let old = StoredRow(kind: .webhookEndpoint, values: Array(row.values.dropLast()))
        XCTAssertEqual(BatchCodec.decode(BatchCodec.encode([old])), [old])
        XCTAssertEqual(old.sql, StoredRow.Kind.endpointStatementBeforeDigest)
        XCTAssertFalse(old.sql.contains("configured_digest"))
        XCTAssertTrue(row.sql.contains("configured_digest"))
        XCTAssertEqual(old.key, row.key, "both versions' rows of one endpoint coalesce")
        XCTAssertNil(BatchCodec.decode(BatchCodec.encode([StoredRow(kind: .webhookEndpoint, values: Array(old.values.dropLast()))])))

        let directory = try temporaryDirectory()
        let raw = try DatabaseQueue(path: StoreConfiguration(directory: directory).databasePath)
        try SQLiteStore.migrate(raw, upTo: "v10_webhooks")
        try raw.close()
        try appendToTheLog(directory, [[old]])
        let store = try store(directory, migrate: false)
        XCTAssertEqual(store.foldStats.batches, 1, "folded into the v10 tables")
        XCTAssertEqual(try store.migrate(), ["v11_webhook_configured_digest"])
        var expected = rotated
        expected.configuredDigest = nil
        XCTAssertEqual(try store.webhookEndpointStates(), [expected])
        try store.apply([.saveWebhookEndpoint(rotated)])
        XCTAssertEqual(try store.webhookEndpointStates(), [rotated])
    }

    // MARK: - Indexes

    func test_theWebhookAndDeviceQueriesUseTheirIndexes() throws {
        let directory = try temporaryDirectory()
        let store = try store(directory, foldInterval: .zero)
        try store.apply([.enqueueWebhook(message("msg_1"), endpoints: ["ops"])])
        let raw = try DatabaseQueue(path: StoreConfiguration(directory: directory).databasePath)
        defer { try? raw.close() }
        try raw.read { db in
            let plans = [
                // As `pendingWebhooks()` asks.
                """
                SELECT d.*, m.data FROM webhook_delivery d CROSS JOIN webhook_message m ON m.id = d.message_id
                WHERE d.status = 'pending' ORDER BY d.lane, d.seq, d.message_id, d.endpoint
                """: "webhook_delivery_pending",
                "SELECT * FROM webhook_delivery ORDER BY created_at DESC, message_id DESC, endpoint DESC LIMIT 10": "webhook_delivery_on_created_at",
                """
                SELECT * FROM webhook_delivery WHERE (created_at, message_id, endpoint) < ('2027-01-01 00:00:00.000', 'msg_1', 'ops')
                ORDER BY created_at DESC, message_id DESC, endpoint DESC LIMIT 10
                """: "webhook_delivery_on_created_at",
                "SELECT * FROM device WHERE user_id = 'bob' ORDER BY created_at, token, provider": "device_on_user_id_created_at",
            ]
            for (query, index) in plans {
                let plan = try Row.fetchAll(db, sql: "EXPLAIN QUERY PLAN " + query).map { row -> String in row["detail"] }.joined(separator: " | ")
                XCTAssertTrue(plan.contains(index), "\(query): \(plan)")
                if query.contains("webhook_delivery") {
                    XCTAssertFalse(plan.contains("TEMP B-TREE"), "the index gives the order: \(query): \(plan)")
                }
            }
        }
    }
}
