import Foundation
import SwitchboardCore
import SwitchboardStore
import XCTest

/// WAL checkpoints on a connection of their own (`store.checkpoint_interval_ms`), so commits do
/// not copy the WAL into the database file themselves.
final class SQLiteStoreCheckpointTests: XCTestCase {
    private func fileSize(_ path: String) throws -> Int {
        (try FileManager.default.attributesOfItem(atPath: path)[.size] as? Int) ?? 0
    }

    /// `count` audit entries of about 4 KB each (150: about 600 KB, well under the 10,000-page
    /// backstop in pages of 1 KiB).
    private func writeABatch(_ store: SQLiteStore, count: Int = 150) throws {
        let detail = String(repeating: "x", count: 4000)
        for index in 0..<count {
            _ = try store.append(AuditEntry(at: Date(timeIntervalSince1970: 1_700_000_000), actor: "t", action: "a", target: "\(index)", detail: detail))
        }
    }

    func test_theBackgroundCheckpointerCopiesTheWALIntoTheDatabaseWhileTheWriterLeavesItToIt() throws {
        let directory = try temporaryDirectory()
        let configuration = StoreConfiguration(directory: directory, checkpointInterval: .milliseconds(10))
        let store = try SQLiteStore(configuration: configuration)
        XCTAssertEqual(try store.pragma("wal_autocheckpoint"), "10000", "the writer's own checkpoint is only a backstop")
        let before = try fileSize(configuration.databasePath)
        try writeABatch(store)
        let deadline = Date(timeIntervalSinceNow: 10)
        var grown = try fileSize(configuration.databasePath)
        while grown < before + 500_000, Date() < deadline {
            usleep(5_000)  // polling the file size: the checkpointer runs on its own timer
            grown = try fileSize(configuration.databasePath)
        }
        XCTAssertGreaterThanOrEqual(grown, before + 500_000, "the rows reached the database file (\(before) -> \(grown) bytes)")
        XCTAssertEqual(try store.integrityCheck(), "ok")
        XCTAssertEqual(try store.entries(limit: 1000, before: nil).count, 150)
    }

    func test_withAnIntervalOfZeroSQLiteCheckpointsInCommitsAndNothingRunsBesideThem() throws {
        let directory = try temporaryDirectory()
        let configuration = StoreConfiguration(directory: directory, checkpointInterval: .zero)
        let store = try SQLiteStore(configuration: configuration)
        XCTAssertEqual(try store.pragma("wal_autocheckpoint"), "1000", "SQLite's default")
        XCTAssertEqual(try store.pragma("page_size"), "\(SQLiteStore.pageSize)")
        let before = try fileSize(configuration.databasePath)
        try writeABatch(store, count: 60)  // about 300 pages of 1 KiB: under SQLite's 1,000
        XCTAssertLessThan(try fileSize(configuration.databasePath), before + 100_000, "under 1,000 pages nothing is checkpointed")
        XCTAssertGreaterThan(try fileSize(configuration.databasePath + "-wal"), 240_000, "the rows are in the WAL")
    }

    func test_onceTheStoreGoesIdleTheWALFileIsTruncated() throws {
        let directory = try temporaryDirectory()
        let configuration = StoreConfiguration(directory: directory, checkpointInterval: .milliseconds(10))
        let store = try SQLiteStore(configuration: configuration)
        XCTAssertEqual(try store.pragma("journal_size_limit"), "\(4 << 20)")
        try writeABatch(store)
        let wal = configuration.databasePath + "-wal"
        let deadline = Date(timeIntervalSinceNow: 10)
        var size = try fileSize(wal)
        while size > 0, Date() < deadline {
            usleep(5_000)  // polling the file size: the checkpointer runs on its own timer
            size = try fileSize(wal)
        }
        XCTAssertEqual(size, 0, "an idle store keeps no WAL on disk")
        XCTAssertEqual(try store.entries(limit: 1000, before: nil).count, 150)
        XCTAssertEqual(try store.integrityCheck(), "ok")
    }
}
