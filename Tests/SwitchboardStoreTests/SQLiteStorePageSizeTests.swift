import Foundation
import GRDB
import SwitchboardCore
import SwitchboardStore
import XCTest

/// New databases get pages of 1 KiB (a join dirties a page in each of its B-trees and each is
/// written whole); a database made before keeps its pages and works as it did.
final class SQLiteStorePageSizeTests: XCTestCase {
    func test_aNewDatabaseHasSmallPages() throws {
        let store = try SQLiteStore(configuration: StoreConfiguration(directory: try temporaryDirectory()))
        XCTAssertEqual(try store.pragma("page_size"), "1024")
        XCTAssertEqual(try store.pragma("journal_mode"), "wal")
    }

    func test_anExistingDatabaseKeepsItsPageSize() throws {
        let configuration = StoreConfiguration(directory: try temporaryDirectory())
        do {
            let older = try DatabaseQueue(path: configuration.databasePath)
            try older.writeWithoutTransaction { db in
                try db.execute(sql: "PRAGMA page_size = 4096")
                try db.execute(sql: "PRAGMA journal_mode = WAL")
            }
            try SQLiteStore.migrate(older, upTo: "v6_calls")
        }
        let store = try SQLiteStore(configuration: configuration)
        XCTAssertEqual(try store.pragma("page_size"), "4096")
        let call = CallRecord(cid: CallCID(cid: "default:kept")!, createdBy: UserID("alice")!, createdAt: Date(timeIntervalSince1970: 1_800_000_000))
        try store.apply([.saveCall(call)])
        XCTAssertEqual(try store.loadCall(call.cid)?.call.createdAt, call.createdAt)
        XCTAssertEqual(try store.integrityCheck(), "ok")
    }
}
