import Dispatch
import SwitchboardCore

/// Where the application reads the time it passes to the core.
public protocol MonotonicClockSource: Sendable {
    /// The current monotonic time.
    func now() -> MonotonicTime
}

/// The system's monotonic clock.
public struct SystemMonotonicClock: MonotonicClockSource {
    public init() {}
    public func now() -> MonotonicTime {
        MonotonicTime(nanoseconds: Int64(clamping: DispatchTime.now().uptimeNanoseconds))
    }
}
