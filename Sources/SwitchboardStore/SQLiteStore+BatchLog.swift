import Foundation
import GRDB
import SwitchboardCore

/// Folding the batch log into the tables (ADR 0010).
extension SQLiteStore {
    /// Applies every batch committed so far to the tables, in one transaction, and removes the
    /// segments it applied. Runs every `store.fold_interval_ms` on the folder's queue, and before
    /// any read of the call tables, so a read sees every commit that returned before it began.
    /// A failed fold changes nothing: the segments stay and the next fold takes them again.
    public func fold() throws {
        guard let log else { return }
        try folding.withLock { () throws in try foldLocked(log) }
    }

    /// ``fold()`` with the fold lock held.
    func foldLocked(_ log: BatchLog) throws {
        let segments = log.seal()
        guard let last = segments.last else { return }
        let started = DispatchTime.now()
        var rowCount = 0
        do {
            try Self.storeErrors {
                try pool.writeWithoutTransaction { db in
                    // The segments' files go once the fold is on disk, so this one commit is
                    // synced whatever `store.synchronous` says.
                    try db.execute(sql: "PRAGMA synchronous = FULL")
                    defer { try? db.execute(sql: "PRAGMA synchronous = \(configuration.synchronous.rawValue.uppercased())") }
                    try db.inTransaction {
                        // Segments another store on this file folded already (a restart within
                        // one process) are not applied twice.
                        let done = UInt64(bitPattern: try Int64.fetchOne(db, sql: "SELECT folded_through FROM batch_log_state WHERE id = 1") ?? 0)
                        let rows = StoredRow.coalesced(segments.lazy.filter { $0.number > done }.flatMap(\.batches))
                        try StoredRow.execute(rows, in: db)
                        rowCount = rows.count
                        try db.execute(
                            sql: """
                                INSERT INTO batch_log_state (id, folded_through) VALUES (1, ?)
                                ON CONFLICT(id) DO UPDATE SET folded_through = excluded.folded_through
                                """,
                            arguments: [Int64(bitPattern: last.number)])
                        return .commit
                    }
                }
            }
        } catch {
            foldStatistics.withLock { $0.failures += 1 }
            report(FoldReport(failure: error, batches: 0, rows: 0, nanoseconds: elapsed(since: started), pendingBatches: log.pendingBatches))
            throw error
        }
        log.folded(through: last.number)
        let batches = segments.reduce(0) { $0 + $1.batches.count }
        let nanoseconds = elapsed(since: started)
        foldStatistics.withLock { statistics in
            statistics.folds += 1
            statistics.batches += batches
            statistics.rows += rowCount
            statistics.nanoseconds += nanoseconds
        }
        report(FoldReport(failure: nil, batches: batches, rows: rowCount, nanoseconds: nanoseconds, pendingBatches: log.pendingBatches))
    }

    /// Calls `observer` after every fold that had batches to fold, on the folding thread.
    public func observeFolds(_ observer: @escaping @Sendable (FoldReport) -> Void) {
        foldObserver.withLock { $0 = observer }
    }

    private func report(_ report: FoldReport) {
        foldObserver.withLock { $0 }?(report)
    }

    private func elapsed(since started: DispatchTime) -> UInt64 {
        DispatchTime.now().uptimeNanoseconds - started.uptimeNanoseconds
    }

    /// Folds first when a batch not yet folded changed `cid`.
    func foldIfPending(_ cid: CallCID) throws {
        if let log, log.holds(cid: cid.cid) { try fold() }
    }

    /// What the folds did so far, for metrics.
    public var foldStats: FoldStatistics {
        var statistics = foldStatistics.withLock { $0 }
        statistics.pendingBatches = log?.pendingBatches ?? 0
        return statistics
    }

    /// Opens the batch log of a migrated store and folds what a previous run left in it.
    static func openLog(_ pool: DatabasePool, _ configuration: StoreConfiguration) throws -> BatchLog? {
        guard configuration.foldInterval > .zero else { return nil }
        let foldedThrough = try pool.read { db -> UInt64? in
            guard try db.tableExists("batch_log_state") else { return nil }
            return UInt64(bitPattern: try Int64.fetchOne(db, sql: "SELECT folded_through FROM batch_log_state WHERE id = 1") ?? 0)
        }
        // A store opened without its migrations writes the tables directly.
        guard let foldedThrough else { return nil }
        return try BatchLog(
            directory: configuration.batchLogDirectory, foldedThrough: foldedThrough,
            syncEveryAppend: configuration.synchronous == .full)
    }

    /// Folds every `interval` on a queue of its own; errors wait for the next round.
    static func startFolder(_ store: SQLiteStore, interval: Duration) -> any DispatchSourceTimer {
        let timer = DispatchSource.makeTimerSource(queue: DispatchQueue(label: "switchboard.folder", qos: .utility))
        let milliseconds = max(1, Int(interval.milliseconds))
        timer.schedule(deadline: .now() + .milliseconds(milliseconds), repeating: .milliseconds(milliseconds), leeway: .milliseconds(milliseconds / 10))
        timer.setEventHandler { [weak store] in try? store?.fold() }
        timer.resume()
        return timer
    }
}

/// Counts of the batch log's folds since the store opened.
public struct FoldStatistics: Sendable, Equatable {
    public var folds = 0
    public var failures = 0
    /// Batches (commits) folded, and the rows written for them once coalesced.
    public var batches = 0
    public var rows = 0
    public var nanoseconds: UInt64 = 0
    /// Batches committed to the log and not folded yet.
    public var pendingBatches = 0

    public init() {}
}

/// One fold, for an observer (the daemon's metrics and log).
public struct FoldReport: Sendable {
    /// Why the fold failed; `nil` when it committed.
    public var failure: (any Error)?
    /// Batches folded and the rows written for them (0 when it failed).
    public var batches: Int
    public var rows: Int
    public var nanoseconds: UInt64
    /// Batches in the log after the fold.
    public var pendingBatches: Int
}
