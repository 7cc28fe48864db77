import Foundation
import PostgresNIO
import SwitchboardCore
@testable import SwitchboardPostgres
import XCTest

/// How the PostgreSQL store writes a batch: a few statements whatever its size, each column one
/// array. (What the rows mean once stored is the call store contract's.)
final class PostgresBatchTests: XCTestCase, CallFixtures {
    /// A commit of 50 joins: every row of a table goes in one statement, its deletes in one more.
    func test_aBatchOfManyJoinsIsOneStatementPerTableAndKindOfWrite() throws {
        var mutations: [CallMutation] = []
        for i in 0..<50 {
            let id = "c\(i)"
            mutations += [
                .saveCall(call(id)), .saveMember(member(id, "u\(i)", state: .accepted)), .saveSession(session("s-\(i)", id, "u\(i)")),
                .appendEvent(event(id, 1)), .appendEvent(event(id, 2)), .saveConnection(connection("k-\(i)")),
                .saveMember(member(id, "v\(i)", state: .ringing)), .deleteConnection(ClientConnectionID("gone-\(i)")),
            ]
        }
        let statements = try PostgresStore.statements(mutations)
        XCTAssertEqual(statements.count, 6, statements.map(\.0).joined(separator: "\n"))
        XCTAssertEqual(
            statements.map { $0.0.split(separator: " ").prefix(3).joined(separator: " ") },
            [
                "INSERT INTO call", "INSERT INTO call_member", "INSERT INTO call_session", "INSERT INTO call_event",
                "DELETE FROM client_connection", "INSERT INTO client_connection",
            ])
        XCTAssertEqual(
            statements.map(\.1.count), [13, 7, 11, 5, 2, 7], "one array per column (per key column for deletes, and a connection's node)")
        XCTAssertEqual(try PostgresStore.statements([]).count, 0, "an empty batch writes nothing")
    }

    func test_theSQLUpsertsByKeyAppendsInOrderAndDeletesByEveryKeyColumn() {
        let member = PostgresStore.Table.member
        XCTAssertEqual(
            member.insertSQL,
            "INSERT INTO call_member (cid, user_id, added_at, ring_state, ring_reason, ring_updated_at, ring_deadline) SELECT * FROM "
                + "unnest($1::text[], $2::text[], $3::timestamptz[], $4::text[], $5::text[], $6::timestamptz[], $7::timestamptz[]) "
                + "ON CONFLICT (cid, user_id) DO UPDATE SET added_at = EXCLUDED.added_at, ring_state = EXCLUDED.ring_state, "
                + "ring_reason = EXCLUDED.ring_reason, ring_updated_at = EXCLUDED.ring_updated_at, ring_deadline = EXCLUDED.ring_deadline")
        XCTAssertEqual(
            member.deleteSQL, "DELETE FROM call_member WHERE (cid, user_id) IN (SELECT * FROM unnest($1::text[], $2::text[]))")
        let connection = PostgresStore.Table.connection
        XCTAssertEqual(
            connection.deleteSQL,
            "DELETE FROM client_connection USING unnest($1::text[], $2::text[]) AS d(id, node) WHERE client_connection.id = d.id AND "
                + "(client_connection.node IS NULL OR d.node IS NULL OR client_connection.node = d.node OR NOT (EXISTS (SELECT 1 FROM node n "
                + "WHERE n.id = client_connection.node AND n.lease_until > now())))")
        XCTAssertTrue(
            connection.insertSQL.hasSuffix(
                "WHERE client_connection.node IS NULL OR EXCLUDED.node IS NULL OR client_connection.node = EXCLUDED.node OR NOT (EXISTS "
                    + "(SELECT 1 FROM node n WHERE n.id = client_connection.node AND n.lease_until > now()))"))
        XCTAssertTrue(PostgresStore.Table.event.insertSQL.hasSuffix("WITH ORDINALITY AS u(cid, call_session, at, type, payload, n) ORDER BY n"))
        XCTAssertTrue(PostgresStore.Table.message.insertSQL.hasSuffix("ON CONFLICT (id) DO NOTHING"))
    }

    /// NULL elements among values, as a batch's optional columns bind them, read back as NULL
    /// in their places; an array of only NULLs too.
    func test_columnArraysCarryNullsInTheirPlaces() throws {
        let when = Date(timeIntervalSince1970: 1_800_000_000.123)
        var binds = PostgresBindings()
        try binds.append(ColumnArray<String>([nil, "a", nil, "\u{212B}", ""]))
        try binds.append(ColumnArray<Date>([when, nil, nil, when, nil]))
        try binds.append(ColumnArray<Int64>([nil, 7, -1, nil, Int64.max]))
        try binds.append(ColumnArray<Bool>([nil, nil, nil, nil, nil]))
        let rows = try PostgresTestServer.running().withScratchConnection { connection in
            try connection.query(
                PostgresQuery(unsafeSQL: "SELECT * FROM unnest($1::text[], $2::timestamptz[], $3::bigint[], $4::boolean[]) WITH ORDINALITY AS u(t, d, i, b, n) ORDER BY n", binds: binds), logger: PostgresTestServer.logger)
        }
        let decoded = try rows.rows.map { try $0.decode((String?, Date?, Int64?, Bool?, Int64).self) }
        XCTAssertEqual(decoded.map(\.0), [nil, "a", nil, "\u{212B}", ""])
        XCTAssertEqual(decoded.map { $0.1.map { ($0.timeIntervalSince1970 * 1000).rounded() } }, [1_800_000_000_123, nil, nil, 1_800_000_000_123, nil])
        XCTAssertEqual(decoded.map(\.2), [nil, 7, -1, nil, Int64.max])
        XCTAssertEqual(decoded.map(\.3), [nil, nil, nil, nil, nil])
        XCTAssertEqual(decoded.map(\.4), [1, 2, 3, 4, 5])
    }
}

extension PostgresTestServer {
    /// Runs `body` on a connection to a database of its own, closed afterwards.
    func withScratchConnection<T>(_ body: (PostgresConnection) throws -> EventLoopFuture<T>) throws -> T {
        let database = try database()
        let connection = try connect(database: database.database)
        defer { try? connection.close().wait() }
        return try body(connection).wait()
    }
}
