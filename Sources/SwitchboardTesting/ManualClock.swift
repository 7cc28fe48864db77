import Foundation
import SwitchboardApp
import SwitchboardCore

/// A monotonic clock that only moves when a test advances it.
public final class ManualClock: MonotonicClockSource, @unchecked Sendable {
    private let lock = NSLock()
    private var current: MonotonicTime

    public init(start: MonotonicTime = MonotonicTime(nanoseconds: 1_000_000_000)) { current = start }

    public func now() -> MonotonicTime { lock.withLock { current } }

    /// Moves the clock forward.
    public func advance(by duration: Duration) {
        lock.withLock { current = current.advanced(by: duration) }
    }
}
