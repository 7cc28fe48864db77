/// Counts a recurring event and says when to report it: the first occurrence at once, then at
/// most once per `every`, with how many happened since the last report. For log lines an
/// attacker can trigger (accept failures, refused connections), so a flood cannot fill a disk.
public struct RateLimitedCount: Sendable, Equatable {
    public let every: Duration
    private var lastReport: MonotonicTime?
    private var unreported = 0

    public init(every: Duration) { self.every = every }

    /// Records one occurrence at `now`; returns the number to report (this one included) when a
    /// report is due, `nil` otherwise.
    public mutating func record(now: MonotonicTime) -> Int? {
        unreported += 1
        if let last = lastReport, now.since(last) < every { return nil }
        lastReport = now
        defer { unreported = 0 }
        return unreported
    }
}
