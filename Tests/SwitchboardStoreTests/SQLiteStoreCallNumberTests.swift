import Foundation
import GRDB
import SwitchboardCore
import SwitchboardStore
import XCTest

/// Migration `v9_call_number`: a call and its rows are keyed on a number given in creation order
/// (`call_key`), so that new rows land at the right edge of each index (ADR 0010).
final class SQLiteStoreCallNumberTests: XCTestCase, CallFixtures {
    private var directory: URL!

    override func setUpWithError() throws {
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("call-number-\(UUID().uuidString)", isDirectory: true)
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        addTeardownBlock { [directory] in try? FileManager.default.removeItem(at: directory!) }
    }

    private var configuration: StoreConfiguration {
        var configuration = StoreConfiguration(directory: directory.path)
        configuration.foldInterval = .zero
        return configuration
    }

    /// A v8 file (cid-keyed rows, one member of a call that was never saved) opened by this build.
    func test_aV8FileKeepsEveryRowReadableAndOrphanRowsWaitForTheirCall() throws {
        let raw = try DatabaseQueue(path: configuration.databasePath)
        try SQLiteStore.migrate(raw, upTo: "v8_batch_log")
        try raw.write { db in
            for (cid, at) in [("default:zeta", 1), ("default:alpha", 2)] {
                try db.execute(
                    sql: """
                        INSERT INTO call (cid, type, id, created_by, created_at, session, rung, custom)
                        VALUES (?, 'default', ?, 'alice', ?, 1, 0, '{}')
                        """, arguments: [cid, String(cid.dropFirst(8)), date(at)])
                try db.execute(
                    sql: "INSERT INTO call_member (cid, user_id, added_at, ring_state) VALUES (?, 'bob', ?, 'none')", arguments: [cid, date(at)])
                try db.execute(
                    sql: """
                        INSERT INTO call_session (session_id, cid, call_session, user_id, connection_id, role, joined_at, media)
                        VALUES (?, ?, 1, 'bob', 'conn-bob', 'participant', ?, '{}')
                        """, arguments: ["s-\(at)", cid, date(at)])
                try db.execute(
                    sql: "INSERT INTO call_event (cid, call_session, at, type, payload) VALUES (?, 1, ?, 'call.test', '{\"n\":1}')",
                    arguments: [cid, date(at)])
            }
            try db.execute(sql: "INSERT INTO call_member (cid, user_id, added_at, ring_state) VALUES ('default:later', 'bob', ?, 'none')", arguments: [date(3)])
        }
        try raw.close()

        let store = try SQLiteStore(configuration: configuration)
        XCTAssertEqual(try store.appliedMigrations(), SQLiteStore.knownMigrations)
        XCTAssertEqual(try store.appliedMigrations().suffix(3), ["v9_call_number", "v10_webhooks", "v11_webhook_configured_digest"])
        let zeta = try XCTUnwrap(store.callDetail(cid("zeta"), eventLimit: 10))
        XCTAssertEqual(zeta.members.map(\.userID.rawValue), ["bob"])
        XCTAssertEqual(zeta.sessions.map(\.sessionID.rawValue), ["s-1"])
        XCTAssertEqual(zeta.events.map(\.type), ["call.test"])
        XCTAssertEqual(try store.loadCall(cid("alpha"))?.members.map(\.userID.rawValue), ["bob"])
        XCTAssertEqual(cids(try store.listCalls(CallQuery(member: user("bob")))), ["default:alpha", "default:zeta"])
        XCTAssertEqual(try numbers(), ["default:zeta": 1, "default:alpha": 2, "default:later": 3], "old calls keep their creation order")

        XCTAssertNil(try store.loadCall(cid("later")))
        try store.apply([.saveCall(call("later"))])
        XCTAssertEqual(try store.loadCall(cid("later"))?.members, [member("later", "bob", at: 3)])
        XCTAssertEqual(try store.integrityCheck(), "ok")
    }

    /// Calls created one after another get rising numbers whatever their cids, and every read of a
    /// call's rows goes through an index on the number.
    func test_numbersFollowCreationOrderAndEveryCallReadUsesThem() throws {
        let store = try SQLiteStore(configuration: configuration)
        let ids = ["m", "b", "z", "a", "q"]
        for (offset, id) in ids.enumerated() {
            try store.apply([.saveMember(member(id, "bob")), .saveCall(call(id, at: offset)), .appendEvent(event(id, 1))])
        }
        try store.apply([.saveCall(call("b", at: 1, ended: true))])
        XCTAssertEqual(try numbers(), Dictionary(uniqueKeysWithValues: ids.enumerated().map { ("default:\($1)", Int64($0 + 1)) }))

        let raw = try DatabaseQueue(path: configuration.databasePath)
        defer { try? raw.close() }
        try raw.read { db in
            let plans = [
                "SELECT * FROM call_member WHERE call_no = 1 ORDER BY added_at": "PRIMARY KEY",
                "SELECT * FROM call_session WHERE call_no = 1": "call_session_on_call_no_joined_at",
                "SELECT * FROM call_event WHERE call_no = 1 ORDER BY seq DESC LIMIT 5": "call_event_on_call_no_seq",
                "SELECT * FROM call WHERE no = (SELECT no FROM call_key WHERE cid = 'default:m')": "call_key_on_cid",
            ]
            for (query, index) in plans {
                let plan = try Row.fetchAll(db, sql: "EXPLAIN QUERY PLAN " + query).map { row -> String in row["detail"] }.joined(separator: " ")
                XCTAssertTrue(plan.contains(index), "\(query): \(plan)")
                XCTAssertFalse(plan.contains("SCAN"), "\(query): \(plan)")
            }
        }
    }

    private func numbers() throws -> [String: Int64] {
        let raw = try DatabaseQueue(path: configuration.databasePath)
        defer { try? raw.close() }
        return try raw.read { db in
            Dictionary(uniqueKeysWithValues: try Row.fetchAll(db, sql: "SELECT cid, no FROM call_key").map { ($0["cid"], $0["no"]) })
        }
    }
}
