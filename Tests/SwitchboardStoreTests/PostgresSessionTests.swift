import Foundation
import Logging
import PostgresNIO
import SwitchboardCore
import Synchronization
import XCTest

@testable import SwitchboardPostgres

/// ``PostgresSession/transaction(_:)`` against a real server: a transaction the server rolls back
/// to break a deadlock runs again and commits; other refusals are not run again.
final class PostgresSessionTests: XCTestCase {
    private let logger = Logger(label: "test.postgres-session")

    /// A raw connection of the test's own, its statements waited for.
    private struct Raw {
        let connection: PostgresConnection
        func run(_ sql: String) throws -> [PostgresRow] {
            Array(try connection.query(PostgresQuery(unsafeSQL: sql), logger: PostgresTestServer.logger).wait().rows)
        }
    }

    private func makeSession(_ configuration: PostgresStore.Configuration) throws -> PostgresSession {
        PostgresSession(configuration: try configuration.connection(), statementTimeout: .seconds(30), logger: logger)
    }

    /// The other side holds row 1 and asks for row 2, which the session's first attempt holds;
    /// the session then asks for row 1 and, waiting last with the shorter deadlock timeout, is
    /// the server's victim (40P01). Its transaction runs again once the other side committed.
    func test_aTransactionRolledBackForADeadlockRunsAgainAndCommits() throws {
        let server = try PostgresTestServer.running()
        let configuration = try server.database()
        let other = Raw(connection: try server.connect(database: configuration.database))
        let watcher = Raw(connection: try server.connect(database: configuration.database))
        defer {
            try? other.connection.close().wait()
            try? watcher.connection.close().wait()
        }
        _ = try other.run("CREATE TABLE pair (id int PRIMARY KEY, v int NOT NULL)")
        _ = try other.run("INSERT INTO pair VALUES (1, 0), (2, 0)")
        _ = try other.run("SET deadlock_timeout = '60s'")
        _ = try other.run("BEGIN")
        _ = try other.run("UPDATE pair SET v = v + 10 WHERE id = 1")
        let session = try makeSession(configuration)
        defer { session.close() }

        let otherDone = DispatchSemaphore(value: 0)
        let otherFailure = Mutex<(any Error)?>(nil)
        let runs = Mutex(0)
        let attempts = try session.transaction { connection -> Int in
            let attempt = runs.withLock { $0 += 1; return $0 }
            let first = attempt == 1
            try connection.execute("SET LOCAL deadlock_timeout = '100ms'")
            try connection.execute("UPDATE pair SET v = v + 1 WHERE id = 2")
            if first {
                DispatchQueue.global().async {
                    do {
                        _ = try other.run("UPDATE pair SET v = v + 10 WHERE id = 2")
                        _ = try other.run("COMMIT")
                    } catch {
                        otherFailure.withLock { $0 = error }
                    }
                    otherDone.signal()
                }
                let deadline = Date(timeIntervalSinceNow: 10)
                while try watcher.run(
                    "SELECT 1 FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'"
                ).isEmpty {
                    guard Date() < deadline else { throw SwitchboardError(.internalError, "the other side never waited on row 2") }
                    usleep(5_000)
                }
            }
            try connection.execute("UPDATE pair SET v = v + 1 WHERE id = 1")
            return attempt
        }
        XCTAssertEqual(otherDone.wait(timeout: .now() + 10), .success)
        XCTAssertNil(otherFailure.withLock { $0 }, "the other side was not the victim")
        XCTAssertEqual(attempts, 2, "the first attempt was rolled back, the second committed")
        let rows = try watcher.run("SELECT id, v FROM pair ORDER BY id").map { try $0.decode((Int, Int).self) }
        XCTAssertEqual(rows.map(\.1), [11, 11], "both sides' changes, each once")
    }

    /// A refusal that is not a rollback (here a unique violation) is not run again: the caller
    /// gets it at once, an internal error naming its SQLSTATE.
    func test_anotherRefusalIsNotRunAgain() throws {
        let server = try PostgresTestServer.running()
        let configuration = try server.database()
        let session = try makeSession(configuration)
        defer { session.close() }
        try session.transaction { try $0.execute("CREATE TABLE once (id int PRIMARY KEY)") }
        let runs = Mutex(0)
        XCTAssertThrowsError(
            try session.transaction { connection in
                runs.withLock { $0 += 1 }
                try connection.execute("INSERT INTO once VALUES (1), (1)")
            }
        ) { error in
            XCTAssertEqual((error as? SwitchboardError)?.code, .internalError, "\(error)")
            XCTAssertTrue("\(error)".contains("23505"), "\(error)")
        }
        XCTAssertEqual(runs.withLock { $0 }, 1)
    }
}
