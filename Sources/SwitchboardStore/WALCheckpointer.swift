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

    init(path: String, interval: Duration, busyTimeout: Duration) throws {
        var configuration = Configuration()
        configuration.busyMode = .timeout(TimeInterval(busyTimeout.milliseconds) / 1000)
        configuration.label = "switchboard.checkpointer"
        connection = try DatabaseQueue(path: path, configuration: configuration)
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
        last = result
        backoff = idle ? min(max(1, backoff * 2), 32) : 0
        skip = backoff
    }
}
