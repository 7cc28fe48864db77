import Foundation
import GRDB
import SwitchboardCore
import SwitchboardStore
import XCTest

/// The SQLite store against real files in a fresh temporary directory per test.
final class SQLiteStoreTests: XCTestCase {
    // MARK: - Helpers

    private func openStore(
        _ directory: String, synchronous: StoreConfiguration.Synchronous = .normal,
        busyTimeout: Duration = .seconds(5), migrate: Bool = true
    ) throws -> SQLiteStore {
        try SQLiteStore(
            configuration: StoreConfiguration(directory: directory, synchronous: synchronous, busyTimeout: busyTimeout),
            migrate: migrate)
    }

    /// A raw GRDB connection on the database file, beside the store's own pool.
    private func rawQueue(_ directory: String) throws -> DatabaseQueue {
        try DatabaseQueue(path: StoreConfiguration(directory: directory).databasePath)
    }

    /// Whole seconds, so that the stored `datetime` text reads back to an equal `Date`.
    private func date(_ offset: Int) -> Date {
        Date(timeIntervalSince1970: TimeInterval(1_700_000_000 + offset))
    }

    private func entry(_ index: Int) -> AuditEntry {
        AuditEntry(at: date(index), actor: "127.0.0.1:\(40_000 + index)", action: "log_level.set", target: "t\(index)", detail: "d\(index)")
    }

    /// `entry` as the store should give it back with `id`.
    private func stored(_ index: Int, id: Int64) -> AuditEntry {
        var value = entry(index)
        value.id = id
        return value
    }

    private func indexNames(_ db: Database) throws -> [String] {
        try String.fetchAll(db, sql: "SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = 'audit_log' AND sql IS NOT NULL ORDER BY name")
    }

    // MARK: - Migrations

    func testAFreshFileGetsEveryMigration() throws {
        let directory = try temporaryDirectory()
        let store = try openStore(directory)

        XCTAssertFalse(SQLiteStore.knownMigrations.isEmpty)
        XCTAssertEqual(SQLiteStore.knownMigrations.first, "v1_audit_log")
        XCTAssertTrue(SQLiteStore.knownMigrations.contains("v2_audit_log_action_index"))
        XCTAssertEqual(try store.appliedMigrations(), SQLiteStore.knownMigrations)
        XCTAssertTrue(FileManager.default.fileExists(atPath: directory + "/switchboard.sqlite"))
        XCTAssertEqual(try store.migrate(), [], "a second migration pass must have nothing to apply")

        let queue = try rawQueue(directory)
        try queue.read { db in
            XCTAssertTrue(try db.tableExists("audit_log"))
            XCTAssertEqual(try indexNames(db), ["audit_log_on_action_at"])
        }
    }

    func testOpeningWithoutMigratingLeavesTheFileEmptyUntilMigrateIsCalled() throws {
        let directory = try temporaryDirectory()
        let store = try openStore(directory, migrate: false)
        XCTAssertEqual(try store.appliedMigrations(), [])
        XCTAssertEqual(try store.migrate(), SQLiteStore.knownMigrations)
        XCTAssertEqual(try store.appliedMigrations(), SQLiteStore.knownMigrations)
        XCTAssertEqual(try store.migrate(), [])
    }

    func testAFileAtThePreviousSchemaIsUpgradedAndKeepsItsRows() throws {
        let directory = try temporaryDirectory()
        let v1 = try rawQueue(directory)
        try SQLiteStore.migrate(v1, upTo: "v1_audit_log")
        try v1.write { db in
            XCTAssertEqual(try DatabaseMigrator().appliedIdentifiers(db), ["v1_audit_log"])
            XCTAssertEqual(try indexNames(db), [], "v1 has no index on audit_log")
            for index in 1...3 {
                let value = entry(index)
                try db.execute(
                    sql: "INSERT INTO audit_log (at, actor, action, target, detail) VALUES (?, ?, ?, ?, ?)",
                    arguments: [value.at, value.actor, value.action, value.target, value.detail])
            }
            // A row written with only the NOT NULL columns: v1's defaults fill the rest.
            try db.execute(sql: "INSERT INTO audit_log (at, actor, action) VALUES (?, 'operator', 'drain')", arguments: [date(4)])
        }
        try v1.close()

        let store = try openStore(directory)
        XCTAssertEqual(try store.appliedMigrations(), SQLiteStore.knownMigrations)
        XCTAssertEqual(try store.pragma("journal_mode"), "wal")
        XCTAssertEqual(
            try store.entries(limit: 10, before: nil),
            [
                AuditEntry(id: 4, at: date(4), actor: "operator", action: "drain", target: "", detail: ""),
                stored(3, id: 3), stored(2, id: 2), stored(1, id: 1),
            ])
        XCTAssertEqual(try store.integrityCheck(), "ok")

        let raw = try rawQueue(directory)
        try raw.read { db in
            XCTAssertEqual(try indexNames(db), ["audit_log_on_action_at"])
            let columns = try String.fetchAll(db, sql: "SELECT name FROM pragma_index_info('audit_log_on_action_at') ORDER BY seqno")
            XCTAssertEqual(columns, ["action", "at"])
        }
        // New rows continue after the old ones.
        XCTAssertEqual(try store.append(entry(5)).id, 5)
    }

    // MARK: - Connection settings

    func testJournalModeIsWAL() throws {
        let store = try openStore(try temporaryDirectory())
        XCTAssertEqual(try store.pragma("journal_mode"), "wal")
        XCTAssertTrue(FileManager.default.fileExists(atPath: store.configuration.databasePath + "-wal"))
    }

    func testBusyTimeoutIsTheConfiguredMilliseconds() throws {
        for milliseconds in [5000, 1234, 250, 0] {
            let store = try openStore(try temporaryDirectory(), busyTimeout: .milliseconds(milliseconds))
            XCTAssertEqual(try store.pragma("busy_timeout"), String(milliseconds), "busy_timeout_ms \(milliseconds)")
        }
    }

    /// `TimeInterval(ms) / 1000` then `CInt(seconds * 1000)` (GRDB) truncates some values by one.
    func testBusyTimeoutIsExactForMillisecondsThatAreInexactInBinary() throws {
        for milliseconds in [1001, 1003, 2002] {
            let store = try openStore(try temporaryDirectory(), busyTimeout: .milliseconds(milliseconds))
            XCTAssertEqual(try store.pragma("busy_timeout"), String(milliseconds), "busy_timeout_ms \(milliseconds)")
        }
    }

    func testTheDefaultBusyTimeoutIsFiveSeconds() throws {
        let store = try SQLiteStore(configuration: StoreConfiguration(directory: try temporaryDirectory()))
        XCTAssertEqual(try store.pragma("busy_timeout"), "5000")
        XCTAssertEqual(try store.pragma("synchronous"), "1")
    }

    func testSynchronousNormalIsOne() throws {
        let store = try openStore(try temporaryDirectory(), synchronous: .normal)
        XCTAssertEqual(try store.pragma("synchronous"), "1")
    }

    func testSynchronousFullIsTwo() throws {
        let store = try openStore(try temporaryDirectory(), synchronous: .full)
        XCTAssertEqual(try store.pragma("synchronous"), "2", "store.synchronous = full must reach the writer connection")
    }

    // MARK: - Audit log

    func testAppendReturnsTheEntryWithIncreasingIDs() throws {
        let store = try openStore(try temporaryDirectory())
        var ids: [Int64] = []
        for index in 1...5 {
            let returned = try store.append(entry(index))
            XCTAssertEqual(returned, stored(index, id: try XCTUnwrap(returned.id)))
            ids.append(try XCTUnwrap(returned.id))
        }
        XCTAssertEqual(ids, [1, 2, 3, 4, 5])
        XCTAssertEqual(try store.entries(limit: 100, before: nil), (1...5).reversed().map { stored($0, id: Int64($0)) })
    }

    func testEntriesPaginateNewestFirst() throws {
        let store = try openStore(try temporaryDirectory())
        XCTAssertEqual(try store.entries(limit: 3, before: nil), [])
        for index in 1...7 { _ = try store.append(entry(index)) }

        let first = try store.entries(limit: 3, before: nil)
        XCTAssertEqual(first, [stored(7, id: 7), stored(6, id: 6), stored(5, id: 5)])
        let second = try store.entries(limit: 3, before: first.last?.id)
        XCTAssertEqual(second, [stored(4, id: 4), stored(3, id: 3), stored(2, id: 2)])
        let third = try store.entries(limit: 3, before: second.last?.id)
        XCTAssertEqual(third, [stored(1, id: 1)])
        XCTAssertEqual(try store.entries(limit: 3, before: 1), [])

        XCTAssertEqual((first + second + third).map(\.id), (1...7).reversed().map { Int64($0) })
        XCTAssertEqual(try store.entries(limit: 100, before: nil).count, 7)
        XCTAssertEqual(try store.entries(limit: 1, before: nil), [stored(7, id: 7)])
        XCTAssertEqual(try store.entries(limit: 2, before: 100), [stored(7, id: 7), stored(6, id: 6)])
        XCTAssertEqual(try store.entries(limit: 2, before: 6), [stored(5, id: 5), stored(4, id: 4)])
        XCTAssertEqual(try store.entries(limit: 0, before: nil), [])
    }

    func testTimestampsReadBackToTheMillisecond() throws {
        let store = try openStore(try temporaryDirectory())
        let at = Date(timeIntervalSince1970: 1_700_000_000.123_456)
        _ = try store.append(AuditEntry(at: at, actor: "a", action: "drain"))
        let read = try XCTUnwrap(try store.entries(limit: 1, before: nil).first)
        XCTAssertEqual(read.at.timeIntervalSince1970, at.timeIntervalSince1970, accuracy: 0.001)
        XCTAssertEqual(read.actor, "a")
        XCTAssertEqual(read.action, "drain")
        XCTAssertEqual(read.target, "")
        XCTAssertEqual(read.detail, "")
    }

    func testTextIsStoredVerbatim() throws {
        let store = try openStore(try temporaryDirectory())
        let odd = AuditEntry(at: date(0), actor: "[::1]:5', \"x\"", action: "peer.disconnect", target: "pé 🛰 ' ; DROP TABLE audit_log; --", detail: "line1\nline2\ttab \\ \u{7F}")
        let returned = try store.append(odd)
        var expected = odd
        expected.id = returned.id
        XCTAssertEqual(returned, expected)
        XCTAssertEqual(try store.entries(limit: 1, before: nil), [expected])
    }

    /// GRDB binds and reads `String` as NUL-terminated C text, so an embedded NUL would cut the
    /// rest off after `append` has already returned the whole entry as committed.
    func testAnEmbeddedNULIsNeitherTruncatedSilentlyNorAcknowledged() throws {
        let store = try openStore(try temporaryDirectory())
        let withNUL = AuditEntry(at: date(0), actor: "a", action: "peer.disconnect", target: "x\u{0}hidden", detail: "d\u{0}e")
        do {
            let returned = try store.append(withNUL)
            let read = try store.entries(limit: 1, before: returned.id.map { $0 + 1 })
            XCTAssertEqual(read, [returned], "what append acknowledged differs from what was committed")
        } catch {
            // Refusing the entry is acceptable; acknowledging a truncated one is not.
            XCTAssertEqual(try store.entries(limit: 1, before: nil), [])
        }
    }

    // MARK: - Health

    func testIntegrityCheckIsOK() throws {
        let store = try openStore(try temporaryDirectory())
        for index in 1...20 { _ = try store.append(entry(index)) }
        XCTAssertEqual(try store.integrityCheck(), "ok")
    }

    func testAFreshStoreIsWritable() throws {
        let store = try openStore(try temporaryDirectory())
        XCTAssertTrue(store.isWritable())
        XCTAssertEqual(try store.entries(limit: 10, before: nil), [], "the writability probe must not leave rows behind")
    }

    func testAStoreIsNotWritableWhileAnotherConnectionHoldsTheWriteLock() throws {
        let directory = try temporaryDirectory()
        let store = try openStore(directory, busyTimeout: .milliseconds(0))
        let other = try rawQueue(directory)
        try other.inDatabase { db in
            try db.execute(sql: "BEGIN IMMEDIATE")
            XCTAssertFalse(store.isWritable())
            XCTAssertThrowsError(try store.append(entry(1)))
            try db.execute(sql: "ROLLBACK")
        }
        XCTAssertTrue(store.isWritable())
        XCTAssertEqual(try store.append(entry(1)).id, 1)
    }

    func testAWriterWaitsForTheBusyTimeoutBeforeGivingUp() throws {
        let directory = try temporaryDirectory()
        let store = try openStore(directory, busyTimeout: .milliseconds(300))
        let other = try rawQueue(directory)
        try other.inDatabase { db in
            try db.execute(sql: "BEGIN IMMEDIATE")
            let started = ContinuousClock.now
            XCTAssertFalse(store.isWritable())
            let waited = ContinuousClock.now - started
            XCTAssertGreaterThanOrEqual(waited, .milliseconds(250), "gave up after \(waited)")
            XCTAssertLessThan(waited, .seconds(10))
            try db.execute(sql: "ROLLBACK")
        }
        XCTAssertTrue(store.isWritable())
    }

    // MARK: - Failures and sharing

    func testADirectoryThatCannotBeCreatedThrowsUnavailableNamingThePath() throws {
        let root = try temporaryDirectory()
        let blocker = root + "/blocker"
        XCTAssertTrue(FileManager.default.createFile(atPath: blocker, contents: Data("not a directory".utf8)))
        let directory = blocker + "/state"

        XCTAssertThrowsError(try openStore(directory)) { error in
            guard let failure = error as? SwitchboardError else {
                return XCTFail("expected a SwitchboardError, got \(type(of: error)): \(error)")
            }
            XCTAssertEqual(failure.code, .unavailable)
            XCTAssertEqual(failure.code.category.httpStatus, 503)
            XCTAssertTrue(failure.message.contains(directory), "message does not name \(directory): \(failure.message)")
        }
    }

    func testAnUnreadableDatabaseFileThrowsUnavailableNamingThePath() throws {
        let directory = try temporaryDirectory()
        let path = StoreConfiguration(directory: directory).databasePath
        XCTAssertTrue(FileManager.default.createFile(atPath: path, contents: Data(repeating: 0x5A, count: 8192)))

        XCTAssertThrowsError(try openStore(directory)) { error in
            guard let failure = error as? SwitchboardError else {
                return XCTFail("expected a SwitchboardError, got \(type(of: error)): \(error)")
            }
            XCTAssertEqual(failure.code, .unavailable)
            XCTAssertTrue(failure.message.contains(path), "message does not name \(path): \(failure.message)")
        }
    }

    func testASecondStoreOnTheSameDirectorySeesTheFirstsCommits() throws {
        let directory = try temporaryDirectory()
        let first = try openStore(directory)
        XCTAssertEqual(try first.append(entry(1)).id, 1)

        let second = try openStore(directory)
        XCTAssertEqual(try second.appliedMigrations(), SQLiteStore.knownMigrations)
        XCTAssertEqual(try second.entries(limit: 10, before: nil), [stored(1, id: 1)])

        // Later commits of either are visible to the other's next read.
        XCTAssertEqual(try first.append(entry(2)).id, 2)
        XCTAssertEqual(try second.entries(limit: 10, before: nil), [stored(2, id: 2), stored(1, id: 1)])
        XCTAssertEqual(try second.append(entry(3)).id, 3)
        XCTAssertEqual(try first.entries(limit: 10, before: nil), [stored(3, id: 3), stored(2, id: 2), stored(1, id: 1)])

        XCTAssertEqual(try first.integrityCheck(), "ok")
        XCTAssertEqual(try second.integrityCheck(), "ok")
    }

    func testCommittedEntriesSurviveReopening() throws {
        let directory = try temporaryDirectory()
        do {
            let store = try openStore(directory, synchronous: .full)
            for index in 1...4 { _ = try store.append(entry(index)) }
        }
        let reopened = try openStore(directory)
        XCTAssertEqual(try reopened.entries(limit: 10, before: nil), (1...4).reversed().map { stored($0, id: Int64($0)) })
        XCTAssertEqual(try reopened.integrityCheck(), "ok")
    }
}
