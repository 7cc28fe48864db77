import Dispatch
import Foundation
import GRDB

/// Keeps the WAL short from a connection of its own, so the committing thread does not run
/// SQLite's automatic checkpoints (copying the WAL into the database file) inside a commit.
///
/// Every `interval` it runs a PASSIVE checkpoint: it copies what it can without waiting for the
/// writer or readers, and the writer goes on appending meanwhile. While the WAL has nothing new
/// it backs off, doubling up to 32 intervals, so an idle daemon wakes rarely. The writer keeps a
/// distant automatic checkpoint as a backstop, so the WAL stays bounded if this one falls behind.
///
/// `@unchecked Sendable`: `last`, `backoff` and `skip` are touched only by the timer's handler,
/// which runs on one serial queue.
final class WALCheckpointer: @unchecked Sendable {
    private let connection: DatabaseQueue
    private let timer: any DispatchSourceTimer
    private var last: (walFrameCount: Int, checkpointedFrameCount: Int)?
    private var backoff = 0
    private var skip = 0

    /// Pages the writer may leave in the WAL before it checkpoints itself (the backstop).
    static let backstopPages = 10_000
    /// The WAL file is cut back to this size once checkpointed (journal_size_limit), and to
    /// nothing when the store goes idle, so a burst of writes does not keep its disk space.
    static let walSizeLimitBytes = 4 << 20
    private let busyTimeout: Duration
    /// Run while the store is idle, at most once per ``idleActionPeriod`` (on the
    /// checkpointer's queue).
    private let idleAction = NSLock()
    private var onIdle: (@Sendable () -> Void)?
    private var lastIdleAction: DispatchTime?
    static let idleActionPeriod: DispatchTimeInterval = .seconds(15)

    func whenIdle(_ action: @escaping @Sendable () -> Void) { idleAction.withLock { onIdle = action } }

    init(path: String, interval: Duration, busyTimeout: Duration) throws {
        var configuration = Configuration()
        configuration.busyMode = .timeout(TimeInterval(busyTimeout.milliseconds) / 1000)
        configuration.label = "switchboard.checkpointer"
        connection = try DatabaseQueue(path: path, configuration: configuration)
        self.busyTimeout = busyTimeout
        timer = DispatchSource.makeTimerSource(queue: DispatchQueue(label: "switchboard.checkpointer", qos: .utility))
        let milliseconds = Int(interval.milliseconds)
        timer.schedule(deadline: .now() + .milliseconds(milliseconds), repeating: .milliseconds(milliseconds), leeway: .milliseconds(milliseconds / 10))
        timer.setEventHandler { [weak self] in self?.checkpoint() }
        timer.resume()
    }

    deinit { timer.cancel() }

    /// One PASSIVE checkpoint, unless backing off; a failure is left for the next one (or the
    /// writer's backstop).
    func checkpoint() {
        guard skip == 0 else {
            skip -= 1
            return
        }
        guard let result = try? connection.writeWithoutTransaction({ db in try db.checkpoint(.passive) }) else { return }
        let idle = result.walFrameCount == result.checkpointedFrameCount && last.map { $0 == result } == true
        if idle, result.walFrameCount > 0 { truncate() }
        if idle { runIdleAction() }
        last = result
        backoff = idle ? min(max(1, backoff * 2), 32) : 0
        skip = backoff
    }

    private func runIdleAction() {
        let now = DispatchTime.now()
        if let last = lastIdleAction, now < last + Self.idleActionPeriod { return }
        lastIdleAction = now
        idleAction.withLock { onIdle }?()
    }

    /// Idle with everything checkpointed: empties the WAL file (a TRUNCATE checkpoint that does
    /// not wait: if a writer or reader is busy, it is simply tried at the next idle check).
    private func truncate() {
        _ = try? connection.writeWithoutTransaction { db in
            try db.execute(sql: "PRAGMA busy_timeout = 0")
            defer { try? db.execute(sql: "PRAGMA busy_timeout = \(busyTimeout.milliseconds)") }
            return try db.checkpoint(.truncate)
        }
        last = nil
    }
}
