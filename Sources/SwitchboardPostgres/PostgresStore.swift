import Foundation
import Logging
import PostgresNIO
import SwitchboardCore

/// The store on PostgreSQL (`store.kind = "postgres"`, #17, ADR 0012): one database shared by
/// every daemon of a cluster. Built port by port, each run against the contract suite the SQLite
/// store and its in-memory twin pass; so far the audit log and the store's health.
public final class PostgresStore: @unchecked Sendable {
    let session: PostgresSession
    /// Migrations this store applied when it opened (empty when the database was up to date).
    public let migrationsApplied: [String]
    /// Whether this daemon may write now (its hold on the database, ``claimNode``); every write
    /// is refused `unavailable` while it says no. `nil`: always.
    public var writeGate: (@Sendable () -> Bool)? {
        get { gateLock.withLock { gate } }
        set { gateLock.withLock { gate = newValue } }
    }
    private let gateLock = NSLock()
    private var gate: (@Sendable () -> Bool)?

    /// Throws `unavailable` while ``writeGate`` says this daemon may not write.
    func checkWritable() throws(SwitchboardError) {
        if let gate = writeGate, !gate() {
            throw SwitchboardError(.unavailable, "this daemon does not hold the PostgreSQL database now (its lease lapsed or was taken)")
        }
    }

    /// Connects and migrates. Throws `unavailable` when the server cannot be reached, and
    /// `invalidConfiguration` when a newer build migrated the database. A statement the server
    /// does not answer within `statementTimeout` fails with `unavailable`.
    public init(
        configuration: Configuration, statementTimeout: Duration = .seconds(10), logger: Logger = Logger(label: "switchboard.store.postgres")
    ) throws {
        session = PostgresSession(configuration: configuration.connection, statementTimeout: statementTimeout, logger: logger)
        do {
            migrationsApplied = try PostgresMigrations.migrate(session)
        } catch {
            session.close()
            throw error
        }
    }

    /// The migrations applied to the database, in order.
    public func appliedMigrations() throws -> [String] {
        try session.withConnection { try PostgresMigrations.appliedNames($0) }
    }

    /// Every migration this build knows.
    public static var knownMigrations: [String] { PostgresMigrations.names }

    public func close() {
        session.close()
    }

    deinit {
        session.close()
    }
}

extension PostgresStore: AuditLog, StoreHealth {
    public func append(_ entry: AuditEntry) throws -> AuditEntry {
        try entry.validate()
        try checkWritable()
        var binds = PostgresBindings()
        binds.append(entry.at)
        binds.append(entry.actor)
        binds.append(entry.action)
        binds.append(entry.target)
        binds.append(entry.detail)
        let id = try session.withConnection { connection in
            try connection.query("INSERT INTO audit_log (at, actor, action, target, detail) VALUES ($1, $2, $3, $4, $5) RETURNING id", binds)
                .first.map { try $0.decode(Int64.self) }
        }
        var stored = entry
        stored.id = id
        return stored
    }

    public func entries(limit: Int, before: Int64?) throws -> [AuditEntry] {
        var binds = PostgresBindings()
        binds.append(before ?? Int64.max)
        binds.append(Int64(max(0, limit)))
        return try session.withConnection { connection in
            try connection.query("SELECT id, at, actor, action, target, detail FROM audit_log WHERE id < $1 ORDER BY id DESC LIMIT $2", binds)
                .map { row in
                    let (id, at, actor, action, target, detail) = try row.decode((Int64, Date, String, String, String, String).self)
                    return AuditEntry(id: id, at: at, actor: actor, action: action, target: target, detail: detail)
                }
        }
    }

    /// Whether a write transaction can run now: the server answers and is not a read-only
    /// standby.
    public func isWritable() -> Bool {
        (try? session.withConnection { connection in
            try connection.query("SELECT NOT pg_is_in_recovery()").first.map { try $0.decode(Bool.self) }
        }) == true
    }
}
