import Foundation
import GRDB
import Synchronization
import SwitchboardCore

/// The SQLite store, through GRDB: a WAL-mode `DatabasePool` in the state directory.
///
/// Call batches commit by appending to the batch log, which a fold moves into the tables
/// (ADR 0010; the call hub waits for the append from its own call queue, ADR 0006); other
/// writes, and folds, run on GRDB's writer queue; checkpoints run on a connection of their own.
/// Every method that returns after a write has made it durable as `store.synchronous` says,
/// and every read of the call tables folds first, so it sees every commit before it.
public final class SQLiteStore: Sendable {
    /// The configuration it was opened with.
    public let configuration: StoreConfiguration
    let pool: DatabasePool
    /// Checkpoints the WAL off the committing thread; `nil` when SQLite does it in commits.
    private let checkpointer: WALCheckpointer?
    /// Committed call batches not yet in the tables (ADR 0010); `nil` when
    /// `store.fold_interval_ms` is 0 and batches write the tables directly.
    let log: BatchLog?
    /// Held for a whole fold, so folds (the folder's, and those before reads) run one at a time.
    let folding = NSLock()
    let foldStatistics = Mutex(FoldStatistics())
    let foldObserver = Mutex<(@Sendable (FoldReport) -> Void)?>(nil)
    private let folder = FolderTimer()

    deinit { folder.timer?.cancel() }

    /// The page size of a database this build creates.
    public static let pageSize = 1024

    /// Opens (creating if needed) the database and applies pending migrations when `migrate`.
    public init(configuration: StoreConfiguration, migrate: Bool = true) throws {
        self.configuration = configuration
        do {
            try FileManager.default.createDirectory(atPath: configuration.directory, withIntermediateDirectories: true)
            var grdb = Configuration()
            grdb.busyMode = .timeout(TimeInterval(configuration.busyTimeout.milliseconds) / 1000)
            let synchronous = configuration.synchronous.rawValue.uppercased()
            let busyMilliseconds = configuration.busyTimeout.milliseconds
            grdb.prepareDatabase { db in
                // A new database gets small pages (ADR 0006, part 7): a join dirties one page in
                // each of about fifteen B-trees, and each dirty page is written whole to the WAL.
                // Before the WAL mode is set this takes effect; on an existing file it does nothing.
                try db.execute(sql: "PRAGMA page_size = \(Self.pageSize)")
                // GRDB rounds the timeout through seconds; set the exact milliseconds.
                try db.execute(sql: "PRAGMA busy_timeout = \(busyMilliseconds)")
                // When a checkpoint lets the writer start the WAL over, the file shrinks to this.
                try db.execute(sql: "PRAGMA journal_size_limit = \(WALCheckpointer.walSizeLimitBytes)")
            }
            pool = try DatabasePool(path: configuration.databasePath, configuration: grdb)
            // DatabasePool sets synchronous=NORMAL on its writer after prepareDatabase runs.
            try pool.writeWithoutTransaction { db in try db.execute(sql: "PRAGMA synchronous = \(synchronous)") }
            if migrate { try StoreMigrations.migrator.migrate(pool) }
            checkpointer = try Self.startCheckpointer(pool, configuration)
            log = try Self.openLog(pool, configuration)
        } catch let error as SwitchboardError {
            throw error
        } catch {
            throw SwitchboardError(.unavailable, "cannot open the store at \(configuration.databasePath): \(error)")
        }
        // What a previous run committed and did not fold goes into the tables before anything reads them.
        try fold()
        if log != nil { folder.timer = Self.startFolder(self, interval: configuration.foldInterval) }
    }

    /// Runs `action` while the store is idle (nothing new in the WAL since the last checkpoint),
    /// at most every 15 s; only with a checkpoint interval. First the connections drop their
    /// page and statement caches (readers are closed, to be reopened on demand); the daemon then
    /// hands free heap memory back to the kernel, once ended calls have left memory.
    public func whenIdle(_ action: @escaping @Sendable () -> Void) {
        checkpointer?.whenIdle { [weak pool] in
            pool?.releaseMemory()
            action()
        }
    }

    /// With a checkpoint interval, moves the writer's own checkpoint back to a backstop and
    /// starts the background checkpointer.
    private static func startCheckpointer(_ pool: DatabasePool, _ configuration: StoreConfiguration) throws -> WALCheckpointer? {
        guard configuration.checkpointInterval > .zero else { return nil }
        try pool.writeWithoutTransaction { db in try db.execute(sql: "PRAGMA wal_autocheckpoint = \(WALCheckpointer.backstopPages)") }
        return try WALCheckpointer(path: configuration.databasePath, interval: configuration.checkpointInterval, busyTimeout: configuration.busyTimeout)
    }

    /// Applies pending migrations; returns the identifiers applied now.
    @discardableResult
    public func migrate() throws -> [String] {
        let before = try appliedMigrations()
        try StoreMigrations.migrator.migrate(pool)
        return try appliedMigrations().filter { !before.contains($0) }
    }

    /// Migrations recorded in the database, oldest first.
    public func appliedMigrations() throws -> [String] {
        try pool.read { db in try StoreMigrations.applied(db) }
    }

    /// Every migration this build knows.
    public static var knownMigrations: [String] { StoreMigrations.all }

    /// Runs `PRAGMA integrity_check`; `"ok"` when the file is sound.
    public func integrityCheck() throws -> String {
        try pool.read { db in try String.fetchOne(db, sql: "PRAGMA integrity_check") ?? "" }
    }

    /// A PRAGMA's current value on a connection of the pool (for tests and diagnostics).
    public func pragma(_ name: String) throws -> String {
        try pool.write { db in try String.fetchOne(db, sql: "PRAGMA \(name)") ?? "" }
    }
}

/// The folder's timer, set once the store it folds exists.
private final class FolderTimer: @unchecked Sendable {
    var timer: (any DispatchSourceTimer)?
}
