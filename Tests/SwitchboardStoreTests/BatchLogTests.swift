import Foundation
import GRDB
import SwitchboardCore
@testable import SwitchboardStore
import XCTest

/// The batch log (ADR 0010): commits append to segment files, folds move them into the tables,
/// and what a crash leaves behind is folded at the next open. The call store contract runs
/// against the store with the log (`SQLiteCallStoreContractTests`) and without it.
final class BatchLogTests: XCTestCase, CallFixtures {
    /// A store whose folder never runs on its own during a test: folds happen only before reads.
    private func store(_ directory: String, foldInterval: Duration = .seconds(3600)) throws -> SQLiteStore {
        try SQLiteStore(configuration: StoreConfiguration(directory: directory, foldInterval: foldInterval))
    }

    private func segmentFiles(_ directory: String) throws -> [String] {
        let batches = StoreConfiguration(directory: directory).batchLogDirectory
        return try FileManager.default.contentsOfDirectory(atPath: batches).filter { $0.hasSuffix(".batches") }.sorted()
            .map { batches + "/" + $0 }
    }

    private func rawCount(_ directory: String, _ table: String) throws -> Int {
        let raw = try DatabaseQueue(path: StoreConfiguration(directory: directory).databasePath)
        defer { try? raw.close() }
        return try raw.read { db in try Int.fetchOne(db, sql: "SELECT count(*) FROM \(table)") ?? -1 }
    }

    /// A store on `directory` that committed c1 then c2 (one segment, two records) and crashed;
    /// with `damageSecond`, the second record's bytes changed after it was written.
    private func twoCommitsThenACrash(_ directory: String, damageSecond: Bool) throws -> (store: SQLiteStore, segment: String, bytes: Int) {
        let crashed = try store(directory)
        try crashed.apply([.saveCall(call("c1"))])
        try crashed.apply([.saveCall(call("c2"))])
        let segment = try XCTUnwrap(try segmentFiles(directory).first)
        var bytes = [UInt8](try XCTUnwrap(FileManager.default.contents(atPath: segment)))
        if damageSecond {
            bytes[bytes.count - 3] ^= 0xFF
            try Data(bytes).write(to: URL(fileURLWithPath: segment))
        }
        return (crashed, segment, bytes.count)
    }

    // MARK: - Codec

    func test_everyKindOfRowRoundTripsThroughTheCodecAndDamagedBytesDecodeToNil() throws {
        var placed = PlacementRecord(callID: "default:c1", sfu: SFUID("sfu-1")!, locations: [], assignedAt: date(2), reason: "first", room: UInt64.max)
        placed.sources = []
        var withEverything = session("s-1", "c1", "bob")
        withEverything.media = MediaState(audio: true, video: true, speaking: true, audioLevel: -0.25, pinned: true)
        let mutations: [CallMutation] = [
            .saveCall(call("c1", ended: true)), .saveMember(member("c1", "bob", state: .ringing)), .saveSession(withEverything),
            .appendEvent(event("c1", 7)), .saveConnection(connection("k-1", detached: true)), .deleteConnection(ClientConnectionID("k-0")),
            .savePlacement(placed), .deletePlacement(cid("c2")),
            .enqueueWebhook(
                WebhookMessage(id: "msg_1", type: .callRing, createdAt: date(3), lane: "default:c1", seq: 2, data: .object(["n": .number(1)])),
                endpoints: ["ops"]),
            .saveWebhookDelivery(WebhookDelivery(
                messageID: "msg_0", endpoint: "ops", type: .sfuDown, lane: "sfu:a", seq: 5, createdAt: date(1), status: .dead, attempts: 3,
                lastAttemptAt: date(2), lastStatus: 500, lastError: "HTTP 500")),
            .saveWebhookEndpoint(WebhookEndpointState(name: "ops", secret: "whsec_1", disabledAt: date(4))),
            .saveDevice(DeviceRecord(userID: user("bob"), provider: .webpush, token: "{}", createdAt: date(5))),
            .deleteDevice(DeviceKey(provider: .fcm, token: "t")),
        ]
        let rows = try mutations.flatMap(StoredRow.rows)
        XCTAssertEqual(Set(rows.map(\.kind)), Set(StoredRow.Kind.allCases), "one row of every kind")
        XCTAssertEqual(rows.count, mutations.count + 1, "an enqueued webhook is its message and a delivery per endpoint")
        for row in rows { XCTAssertEqual(row.values.count, row.kind.arity, "\(row.kind)") }
        var unusual = StoredRow(kind: .event, values: [
            "default:ünïcødé 📞".databaseValue, Int64.min.databaseValue, 1.5e300.databaseValue, DatabaseValue.null, Data([0, 1, 255]).databaseValue,
        ])
        unusual.values[1] = Int64.min.databaseValue
        let bytes = BatchCodec.encode(rows + [unusual])
        XCTAssertEqual(BatchCodec.decode(bytes), rows + [unusual])
        XCTAssertNil(BatchCodec.decode(bytes.dropLast()), "a cut-off batch")
        XCTAssertNil(BatchCodec.decode(bytes + [0]), "trailing bytes")
        var wrongKind = bytes
        wrongKind[1] = 200
        XCTAssertNil(BatchCodec.decode(wrongKind), "an unknown kind")
        XCTAssertEqual(CRC32C.checksum(Array("123456789".utf8)), 0xE306_9283, "the standard CRC-32C check value")
    }

    // MARK: - Durability

    func test_aCommitThatWasNeverFoldedIsInTheTablesAfterTheNextOpen() throws {
        let directory = try temporaryDirectory()
        let crashed = try store(directory)
        try crashed.apply([.saveCall(call("c1")), .saveMember(member("c1", "alice")), .appendEvent(event("c1", 1))])
        try crashed.apply([.saveSession(session("s-1", "c1", "alice")), .saveConnection(connection("k-1"))])
        XCTAssertEqual(try segmentFiles(directory).count, 1, "both commits are in the open segment")
        XCTAssertEqual(try rawCount(directory, "call"), 0, "nothing is in the tables yet")

        // A second store on the same files, as after a SIGKILL: the first never folds again.
        let reopened = try store(directory)
        XCTAssertEqual(try rawCount(directory, "call"), 1, "the open folded what it found")
        XCTAssertEqual(try segmentFiles(directory), [], "and removed the segment")
        XCTAssertEqual(try reopened.loadCall(cid("c1"))?.members, [member("c1", "alice")])
        XCTAssertEqual(try reopened.loadLiveState().sessions, [session("s-1", "c1", "alice")])
        XCTAssertEqual(try reopened.callDetail(cid("c1"), eventLimit: 10)?.events, [event("c1", 1)])
        XCTAssertEqual(try reopened.loadLiveState().connections, [connection("k-1")])

        // The stale store's rows were folded by the other: a fold of its own applies nothing twice.
        try crashed.fold()
        XCTAssertEqual(try rawCount(directory, "call_event"), 1, "the event is not appended a second time")
    }

    func test_aRecordCutOffByACrashEndsTheLogAndEverythingBeforeItIsKept() throws {
        let directory = try temporaryDirectory()
        let (_, segment, whole) = try twoCommitsThenACrash(directory, damageSecond: false)
        // A third record of which only part reached the file.
        let handle = try XCTUnwrap(FileHandle(forWritingAtPath: segment))
        try handle.seekToEnd()
        try handle.write(contentsOf: Data([200, 0, 0, 0, 1, 2, 3, 4, 1, 0x01]))
        try handle.close()
        XCTAssertEqual(try XCTUnwrap(FileManager.default.contents(atPath: segment)).count, whole + 10)

        let reopened = try store(directory)
        XCTAssertEqual(try reopened.listCalls(CallQuery()).calls.map(\.cid.cid).sorted(), ["default:c1", "default:c2"])

        // A record whose bytes changed fails its checksum: the log ends before it.
        let directory2 = try temporaryDirectory()
        _ = try twoCommitsThenACrash(directory2, damageSecond: true)
        let reopened2 = try store(directory2)
        XCTAssertEqual(try reopened2.listCalls(CallQuery()).calls.map(\.cid.cid), ["default:c1"])
    }

    /// A power loss may cost the last commits, never one in the middle: after a damaged record,
    /// later segments are not applied (they are set aside), at this open or any later one.
    func test_aDamagedRecordEndsTheLogAcrossSegmentsToo() throws {
        let directory = try temporaryDirectory()
        _ = try twoCommitsThenACrash(directory, damageSecond: true)
        // A later segment whose one record (c3) is whole, written by a store of its own.
        let scratch = try temporaryDirectory()
        try store(scratch).apply([.saveCall(call("c3"))])
        let later = StoreConfiguration(directory: directory).batchLogDirectory + "/00000000000000000099.batches"
        try FileManager.default.copyItem(atPath: try XCTUnwrap(try segmentFiles(scratch).first), toPath: later)

        let reopened = try store(directory)
        XCTAssertEqual(try reopened.listCalls(CallQuery()).calls.map(\.cid.cid), ["default:c1"], "c3 follows the damage")
        XCTAssertEqual(try segmentFiles(directory), [])
        XCTAssertTrue(FileManager.default.fileExists(atPath: later + ".after-damage"), "set aside for inspection")
        let again = try store(directory)
        XCTAssertEqual(try again.listCalls(CallQuery()).calls.map(\.cid.cid), ["default:c1"], "nor at the next open")
    }

    // MARK: - Folding

    func test_aFoldWritesEachKeysLastRowOnceAndEveryEventInOrder() throws {
        let directory = try temporaryDirectory()
        let store = try store(directory)
        for round in 1...20 {
            var changed = call("c1")
            changed.session = round
            try store.apply([
                .saveCall(changed), .saveSession(session("s-\(round % 2)", "c1", "bob", at: round)),
                .appendEvent(event("c1", round)), .saveConnection(connection("k-1")),
            ])
            if round % 5 == 0 { try store.apply([.deleteConnection(ClientConnectionID("k-1"))]) }
        }
        XCTAssertEqual(store.foldStats.pendingBatches, 24)
        try store.fold()
        let stats = store.foldStats
        XCTAssertEqual(stats.folds, 1)
        XCTAssertEqual(stats.batches, 24)
        XCTAssertEqual(stats.rows, 1 + 2 + 20 + 1, "one call, two sessions, twenty events, one connection (deleted last)")
        XCTAssertEqual(stats.pendingBatches, 0)
        XCTAssertEqual(try store.loadCall(cid("c1"))?.call.session, 20)
        let detail = try XCTUnwrap(try store.callDetail(cid("c1"), eventLimit: 100))
        XCTAssertEqual(detail.events, (1...20).map { event("c1", $0) })
        XCTAssertEqual(detail.sessions, [session("s-1", "c1", "bob", at: 19), session("s-0", "c1", "bob", at: 20)])
        XCTAssertEqual(try store.loadLiveState().connections, [], "the connection's last row was its delete")
        XCTAssertEqual(try segmentFiles(directory), [])
    }

    func test_theFolderRunsOnItsOwnEveryInterval() throws {
        let directory = try temporaryDirectory()
        let store = try store(directory, foldInterval: .milliseconds(20))
        try store.apply([.saveCall(call("c1"))])
        let deadline = Date(timeIntervalSinceNow: 10)
        while store.foldStats.folds == 0, Date() < deadline { usleep(2_000) }  // polling the folder's own timer
        XCTAssertEqual(store.foldStats.folds, 1)
        XCTAssertEqual(try rawCount(directory, "call"), 1)
    }

    func test_aCallWithAPendingChangeIsFoldedBeforeItLoadsAndOthersAreNot() throws {
        let directory = try temporaryDirectory()
        let store = try store(directory)
        try store.apply([.saveCall(call("c1"))])
        XCTAssertNil(try store.loadCall(cid("c2")), "a call the log never saw loads straight from the tables")
        XCTAssertEqual(store.foldStats.folds, 0)
        XCTAssertEqual(try store.loadCall(cid("c1"))?.call, call("c1"))
        XCTAssertEqual(store.foldStats.folds, 1)
    }

    /// Acknowledged state is never lost: when SQLite refuses a fold, the batches stay in the log,
    /// reads say `unavailable`, and the next fold after the cause is gone applies them all.
    func test_aFoldTheDatabaseRefusesKeepsTheBatchesUntilItCanFoldThem() throws {
        let directory = try temporaryDirectory()
        let store = try store(directory)
        let raw = try DatabaseQueue(path: StoreConfiguration(directory: directory).databasePath)
        try raw.write { db in
            try db.execute(sql: "CREATE TRIGGER refuse_boom BEFORE INSERT ON call_event WHEN NEW.type = 'boom' BEGIN SELECT RAISE(ABORT, 'no'); END")
        }
        var boom = event("c1", 2)
        boom.type = "boom"
        try store.apply([.saveCall(call("c1")), .appendEvent(event("c1", 1))])
        try store.apply([.appendEvent(boom)])
        assertSwitchboardError(.unavailable, try store.listCalls(CallQuery()))
        XCTAssertEqual(store.foldStats.failures, 1)
        XCTAssertEqual(store.foldStats.pendingBatches, 2)
        XCTAssertEqual(try rawCount(directory, "call"), 0, "the refused fold changed nothing")
        try store.apply([.saveCall(call("c2"))])

        try raw.write { db in try db.execute(sql: "DROP TRIGGER refuse_boom") }
        try raw.close()
        XCTAssertEqual(try store.listCalls(CallQuery()).calls.map(\.cid.cid).sorted(), ["default:c1", "default:c2"])
        XCTAssertEqual(try store.callDetail(cid("c1"), eventLimit: 10)?.events, [event("c1", 1), boom])
        XCTAssertEqual(try segmentFiles(directory), [])
    }

    func test_withAFoldIntervalOfZeroBatchesWriteTheTablesAndNoLogIsKept() throws {
        let directory = try temporaryDirectory()
        let store = try store(directory, foldInterval: .zero)
        try store.apply([.saveCall(call("c1"))])
        XCTAssertEqual(try rawCount(directory, "call"), 1)
        XCTAssertFalse(FileManager.default.fileExists(atPath: StoreConfiguration(directory: directory).batchLogDirectory))
    }
}
