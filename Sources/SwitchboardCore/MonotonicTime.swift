/// A point on a monotonic clock, in nanoseconds from an arbitrary origin.
///
/// The core never reads a clock: callers pass the current `MonotonicTime` with every event,
/// so tests drive time by hand.
public struct MonotonicTime: Hashable, Sendable, Comparable, CustomStringConvertible {
    /// Nanoseconds since the clock's origin.
    public let nanoseconds: Int64

    /// Wraps a nanosecond count.
    public init(nanoseconds: Int64) { self.nanoseconds = nanoseconds }

    /// The origin of the clock.
    public static let zero = MonotonicTime(nanoseconds: 0)

    /// This time moved forward (or back) by `duration`.
    public func advanced(by duration: Duration) -> MonotonicTime {
        MonotonicTime(nanoseconds: nanoseconds &+ duration.nanoseconds)
    }

    /// The duration from `earlier` to this time.
    public func since(_ earlier: MonotonicTime) -> Duration {
        .nanoseconds(nanoseconds &- earlier.nanoseconds)
    }

    public var description: String { "t+\(Double(nanoseconds) / 1e9)s" }

    public static func < (lhs: Self, rhs: Self) -> Bool { lhs.nanoseconds < rhs.nanoseconds }
}

extension Duration {
    /// The whole duration in nanoseconds, saturating at `Int64` bounds.
    public var nanoseconds: Int64 {
        let (seconds, attoseconds) = components
        let (scaled, overflow) = seconds.multipliedReportingOverflow(by: 1_000_000_000)
        if overflow { return seconds < 0 ? .min : .max }
        return scaled &+ attoseconds / 1_000_000_000
    }

    /// The whole duration in milliseconds.
    public var milliseconds: Int64 { nanoseconds / 1_000_000 }
}
