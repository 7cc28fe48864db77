import Foundation
import PostgresNIO
import SwitchboardCore
import SwitchboardPostgres
import Synchronization
import XCTest

/// What only the PostgreSQL store does: its own migrations (several daemons opening one database
/// at once, a database a newer build migrated), its URL, and a lost or missing server.
final class PostgresStoreTests: XCTestCase {
    private func database() throws -> PostgresStore.Configuration {
        try PostgresTestServer.running().database()
    }

    private func admin(_ configuration: PostgresStore.Configuration, _ sql: String) throws {
        let connection = try PostgresTestServer.running().connect(database: configuration.database)
        defer { try? connection.close().wait() }
        _ = try connection.query(PostgresQuery(unsafeSQL: sql), logger: PostgresTestServer.logger).wait()
    }

    func test_aNewDatabaseIsMigratedOnceAndReopeningAppliesNothing() throws {
        let configuration = try database()
        let first = try PostgresStore(configuration: configuration)
        XCTAssertEqual(first.migrationsApplied, PostgresStore.knownMigrations)
        XCTAssertEqual(PostgresStore.knownMigrations.first, "v1_audit_log")
        first.close()
        let again = try PostgresStore(configuration: configuration)
        XCTAssertEqual(again.migrationsApplied, [])
        XCTAssertEqual(try again.appliedMigrations(), PostgresStore.knownMigrations)
    }

    /// Daemons of a cluster start together: each migration is applied by exactly one of them
    /// (an advisory lock), and every one opens.
    func test_storesOpeningOneDatabaseAtOnceApplyEachMigrationOnce() throws {
        let configuration = try database()
        let results = Mutex<(applied: [String], failures: [String])>(([], []))
        DispatchQueue.concurrentPerform(iterations: 4) { _ in
            do {
                let store = try PostgresStore(configuration: configuration)
                results.withLock { $0.applied += store.migrationsApplied }
                store.close()
            } catch {
                results.withLock { $0.failures.append("\(error)") }
            }
        }
        XCTAssertEqual(results.withLock { $0.failures }, [])
        XCTAssertEqual(results.withLock { $0.applied }.sorted(), PostgresStore.knownMigrations.sorted())
    }

    func test_aDatabaseANewerBuildMigratedIsRefusedNamingTheMigration() throws {
        let configuration = try database()
        try PostgresStore(configuration: configuration).close()
        try admin(configuration, "INSERT INTO switchboard_migrations (name) VALUES ('v999_from_the_future')")
        XCTAssertThrowsError(try PostgresStore(configuration: configuration)) { error in
            XCTAssertEqual((error as? SwitchboardError)?.code, .invalidConfiguration)
            XCTAssertTrue("\(error)".contains("v999_from_the_future"), "\(error)")
        }
    }

    func test_noServerIsUnavailable() throws {
        let port = try PostgresTestServer.running().port
        // The test server's port with another host part: nothing listens on 127.0.0.2 there.
        let configuration = PostgresStore.Configuration(host: "127.0.0.2", port: port, username: "switchboard", database: "nowhere")
        XCTAssertThrowsError(try PostgresStore(configuration: configuration)) { error in
            XCTAssertEqual((error as? SwitchboardError)?.code, .unavailable, "\(error)")
        }
    }

    /// The server ends the store's connection (a restart, a failover): the next calls connect
    /// again; a call that fails meanwhile fails as `unavailable`, never otherwise.
    func test_aLostConnectionIsReplacedAtTheNextCall() throws {
        let configuration = try database()
        let store = try PostgresStore(configuration: configuration)
        let entry = try store.append(AuditEntry(at: Date(timeIntervalSince1970: 1_800_000_000), actor: "a", action: "drain"))
        XCTAssertTrue(store.isWritable())
        try admin(
            configuration,
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = '\(configuration.database)' AND pid <> pg_backend_pid()")
        var read: [AuditEntry]?
        for _ in 0..<2 where read == nil {
            do {
                read = try store.entries(limit: 10, before: nil)
            } catch {
                XCTAssertEqual((error as? SwitchboardError)?.code, .unavailable, "\(error)")
            }
        }
        XCTAssertEqual(read?.map(\.id), [entry.id], "read again over a new connection")
        XCTAssertTrue(store.isWritable())
    }

    func test_urlsNameWhatIsWrong() throws {
        let parsed = try PostgresStore.Configuration(url: "postgres://sb:pw@db.example:6543/switchboard")
        XCTAssertEqual([parsed.host, "\(parsed.port)", parsed.username, parsed.password ?? "", parsed.database], ["db.example", "6543", "sb", "pw", "switchboard"])
        XCTAssertEqual(try PostgresStore.Configuration(url: "postgresql://sb@127.0.0.1/calls").port, 5432)
        for (url, says) in [
            ("mysql://sb@h/db", "postgres://"), ("postgres://h/db", "no user"), ("postgres://sb@h", "no database"), ("postgres://sb@h/a/b", "no database"),
            ("postgres://sb@/db", "no host"), ("postgres://sb:secretpw@h:70000/db", "port"),
        ] {
            XCTAssertThrowsError(try PostgresStore.Configuration(url: url), url) { error in
                XCTAssertEqual((error as? SwitchboardError)?.code, .invalidConfiguration, url)
                XCTAssertTrue("\(error)".contains(says), "\(url): \(error)")
                XCTAssertFalse("\(error)".contains("secretpw"), "never the password")
            }
        }
    }
}
