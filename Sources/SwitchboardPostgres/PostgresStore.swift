import Foundation
import Logging
import PostgresNIO
import SwitchboardCore

/// The store on PostgreSQL (`store.kind = "postgres"`, #17, ADR 0012): one database shared by
/// every daemon of a cluster. Built port by port, each run against the contract suite the SQLite
/// store and its in-memory twin pass; so far the audit log and the store's health.
public final class PostgresStore: @unchecked Sendable {
    let session: PostgresSession
    /// The node and leader rows' own connection: a renewal never waits behind the call hub's
    /// commits on ``session`` (under load, a queue of them could outlast the lease).
    let nodeSession: PostgresSession
    /// Migrations this store applied when it opened (empty when the database was up to date).
    public let migrationsApplied: [String]
    /// The leadership every write must still hold (ADR 0012): when set, each write transaction
    /// first reads the `leader` row with `FOR SHARE` and is refused `unavailable` (nothing
    /// written) unless this node still leads with this generation. The row lock makes a takeover
    /// wait for a write under way, so the new leader reads everything the old one committed, and
    /// nothing the old one tries later. `nil`: no fencing (a store of its own, tests).
    public var fence: Fence? {
        get { fenceLock.withLock { fenceState.fence } }
        set { fenceLock.withLock { fenceState.fence = newValue } }
    }
    /// Called (on the writing thread) when a write found that another node took the database
    /// over: this node must stop acting as its leader.
    public var onFenced: (@Sendable (Fence) -> Void)? {
        get { fenceLock.withLock { fenceState.onFenced } }
        set { fenceLock.withLock { fenceState.onFenced = newValue } }
    }
    /// The node whose calls this store writes (``ownCalls(as:)``); `nil`: every call (one daemon, tests).
    var callOwnership: PostgresCallOwnership? {
        get { fenceLock.withLock { ownershipState } }
        set { fenceLock.withLock { ownershipState = newValue } }
    }
    private var ownershipState: PostgresCallOwnership?
    private let fenceLock = NSLock()
    private var fenceState: (fence: Fence?, onFenced: (@Sendable (Fence) -> Void)?) = (nil, nil)

    /// Runs `body` as one write transaction, fenced (``fence``).
    func write<T>(_ body: (PostgresSession.Connection) throws -> T) throws -> T {
        let (fence, onFenced) = fenceLock.withLock { fenceState }
        return try session.transaction { connection in
            if let fence {
                guard try Self.stillLeads(fence, connection) else {
                    onFenced?(fence)
                    throw SwitchboardError(
                        .unavailable,
                        "this daemon no longer leads the PostgreSQL database: another node took it over from node \(fence.node) (generation \(fence.generation))")
                }
            }
            return try body(connection)
        }
    }

    /// Connects and migrates. Throws `unavailable` when the server cannot be reached, and
    /// `invalidConfiguration` when a newer build migrated the database. A statement the server
    /// does not answer within `statementTimeout` fails with `unavailable`.
    public init(
        configuration: Configuration, statementTimeout: Duration = .seconds(10), logger: Logger = Logger(label: "switchboard.store.postgres")
    ) throws {
        session = PostgresSession(configuration: try configuration.connection(), statementTimeout: statementTimeout, logger: logger)
        nodeSession = PostgresSession(configuration: try configuration.connection(), statementTimeout: statementTimeout, logger: logger)
        do {
            migrationsApplied = try PostgresMigrations.migrate(session)
        } catch {
            session.close()
            nodeSession.close()
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
        nodeSession.close()
    }

    deinit {
        session.close()
        nodeSession.close()
    }
}

extension PostgresStore: AuditLog, StoreHealth {
    public func append(_ entry: AuditEntry) throws -> AuditEntry {
        try entry.validate()
        var binds = PostgresBindings()
        binds.append(entry.at)
        binds.append(entry.actor)
        binds.append(entry.action)
        binds.append(entry.target)
        binds.append(entry.detail)
        let id = try write { connection in
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

    /// Whether this store's connection to the server is encrypted (TLS), as the server sees it.
    public func usesTLS() throws -> Bool {
        try session.withConnection { connection in
            try connection.query("SELECT ssl FROM pg_stat_ssl WHERE pid = pg_backend_pid()").first?.decode(Bool.self) ?? false
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
