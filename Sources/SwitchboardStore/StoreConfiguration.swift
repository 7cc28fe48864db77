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

    public init(directory: String, synchronous: Synchronous = .normal, busyTimeout: Duration = .seconds(5)) {
        self.directory = directory
        self.synchronous = synchronous
        self.busyTimeout = busyTimeout
    }

    /// The database file's path.
    public var databasePath: String {
        directory.hasSuffix("/") ? directory + "switchboard.sqlite" : directory + "/switchboard.sqlite"
    }
}
