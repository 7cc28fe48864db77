import Foundation
import PostgresNIO
import SwitchboardCore

/// The PostgreSQL schema's history, its own (not the SQLite store's): each migration a name and
/// its statements. Released migrations are never edited: change the schema by appending.
enum PostgresMigrations {
    static let all: [(name: String, statements: [String])] = [
        (
            "v1_audit_log",
            [
                """
                CREATE TABLE audit_log (
                  id BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY, at TIMESTAMPTZ NOT NULL, actor TEXT NOT NULL,
                  action TEXT NOT NULL, target TEXT NOT NULL DEFAULT '', detail TEXT NOT NULL DEFAULT '')
                """,
                "CREATE INDEX audit_log_on_action_at ON audit_log (action, at)",
            ]
        ),
    ]

    /// The names of every migration this build knows, in order.
    static var names: [String] { all.map(\.name) }

    /// Any number of daemons may start at once against one database: each takes the same
    /// transaction-scoped advisory lock, so one migrates and the others then find it done.
    static let lockKey: Int64 = 0x5357_4254_4D49_4752  // "SWBTMIGR"

    /// Applies what is not applied yet, in one transaction; returns the names applied. Refuses a
    /// database a newer build migrated (a migration it does not know), naming it.
    static func migrate(_ session: PostgresSession) throws -> [String] {
        try session.transaction { connection in
            var lock = PostgresBindings()
            lock.append(lockKey)
            try connection.execute("SELECT pg_advisory_xact_lock($1)", lock)
            try connection.execute(
                "CREATE TABLE IF NOT EXISTS switchboard_migrations (name TEXT PRIMARY KEY, applied_at TIMESTAMPTZ NOT NULL DEFAULT now())")
            let applied = try appliedNames(connection)
            if let unknown = applied.first(where: { !names.contains($0) }) {
                throw SwitchboardError(
                    .invalidConfiguration, "the PostgreSQL database has migration \(unknown), which this build does not know: a newer build migrated it")
            }
            var done: [String] = []
            for migration in all where !applied.contains(migration.name) {
                for statement in migration.statements { try connection.execute(statement) }
                var name = PostgresBindings()
                name.append(migration.name)
                try connection.execute("INSERT INTO switchboard_migrations (name) VALUES ($1)", name)
                done.append(migration.name)
            }
            return done
        }
    }

    static func appliedNames(_ connection: PostgresSession.Connection) throws -> [String] {
        try connection.query("SELECT name FROM switchboard_migrations ORDER BY applied_at, name").map { row in
            try row.decode(String.self)
        }
    }
}
