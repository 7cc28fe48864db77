import CSwitchboardShims
import Foundation

/// The CPU priority of the calling thread, for background work that must yield to the
/// signaling and call queues when the CPU is short (webhook delivery, ADR 0011). Linux keeps a
/// nice value per thread; elsewhere nothing changes.
public enum ThreadPriority {
    /// The calling thread's nice value.
    public static var current: Int32 { sb_thread_nice() }

    /// Whether a thread here may lower its nice value back after raising it (root, or an
    /// RLIMIT_NICE that allows it). Tried once, on a thread of its own, so no pool thread is
    /// ever left slowed down.
    public static let canRestore: Bool = {
        let done = DispatchSemaphore(value: 0)
        let result = Box()
        let probe = Thread {
            let before = sb_thread_nice()
            result.value = sb_thread_set_nice(min(before + 1, 19)) == 0 && sb_thread_set_nice(before) == 0 && sb_thread_nice() == before
            done.signal()
        }
        probe.start()
        done.wait()
        return result.value
    }()

    /// Runs `body` at nice `niceness` when that is above the thread's own value and the value can
    /// be put back afterwards (``canRestore``; the thread is a shared pool thread), else at the
    /// thread's own priority.
    public static func run<T>(niceness: Int32, _ body: () throws -> T) rethrows -> T {
        guard niceness > 0, canRestore else { return try body() }
        let before = sb_thread_nice()
        guard niceness > before, sb_thread_set_nice(niceness) == 0 else { return try body() }
        defer { sb_thread_set_nice(before) }
        return try body()
    }

    /// Raises the calling thread's nice value for good (a thread of the caller's own, such as an
    /// event loop's); `false` when the system refused.
    @discardableResult
    public static func lower(to niceness: Int32) -> Bool {
        niceness <= sb_thread_nice() || sb_thread_set_nice(niceness) == 0
    }

    private final class Box: @unchecked Sendable {
        var value = false
    }
}
