/// Settings of the SQLite store (config section `store`).
public struct StoreConfiguration: Sendable, Equatable {
    /// How hard SQLite works to make a commit durable (in WAL mode).
    public enum Synchronous: String, Sendable, Equatable {
        /// Commits survive a process crash; a power loss may drop the last commits (never corrupts).
        case normal
        /// Every commit is fsynced: commits also survive a power loss.
        case full
    }

    /// The state directory; the database is `switchboard.sqlite` inside it.
    public var directory: String
    public var synchronous: Synchronous
    /// How long a writer waits for a lock.
    public var busyTimeout: Duration
    /// How often a connection of its own checkpoints the WAL (PASSIVE), so commits never do;
    /// `.zero` leaves checkpoints to SQLite, inside the commit that fills 1,000 pages.
    public var checkpointInterval: Duration
    /// How often committed call batches are folded from the batch log into the tables
    /// (ADR 0010); `.zero` writes every batch into the tables in its own transaction.
    public var foldInterval: Duration

    public init(
        directory: String, synchronous: Synchronous = .normal, busyTimeout: Duration = .seconds(5),
        checkpointInterval: Duration = .milliseconds(1000), foldInterval: Duration = .milliseconds(2000)
    ) {
        self.foldInterval = foldInterval
        self.directory = directory
        self.synchronous = synchronous
        self.busyTimeout = busyTimeout
        self.checkpointInterval = checkpointInterval
    }

    /// Where the batch log's segment files live.
    public var batchLogDirectory: String {
        directory.hasSuffix("/") ? directory + "batches" : directory + "/batches"
    }

    /// The database file's path.
    public var databasePath: String {
        directory.hasSuffix("/") ? directory + "switchboard.sqlite" : directory + "/switchboard.sqlite"
    }
}
