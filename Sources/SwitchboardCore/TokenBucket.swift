/// A token bucket: `rate` tokens a second, holding at most `burst`.
public struct TokenBucket: Sendable, Equatable {
    public let rate: Double
    public let burst: Double
    private var tokens: Double
    private var updated: MonotonicTime

    /// When the bucket was last used.
    public var updatedAt: MonotonicTime { updated }

    /// A full bucket at `now`.
    public init(rate: Double, burst: Double, now: MonotonicTime) {
        self.rate = rate
        self.burst = burst
        self.tokens = burst
        self.updated = now
    }

    /// The tokens the bucket would hold at `now`, without taking any.
    public func available(now: MonotonicTime) -> Double {
        let elapsed = Double(max(0, now.nanoseconds - updated.nanoseconds)) / 1e9
        return min(burst, tokens + elapsed * rate)
    }

    /// Takes one token; `false` when the bucket is empty.
    public mutating func take(now: MonotonicTime) -> Bool {
        let elapsed = Double(max(0, now.nanoseconds - updated.nanoseconds)) / 1e9
        tokens = min(burst, tokens + elapsed * rate)
        updated = now
        guard tokens >= 1 else { return false }
        tokens -= 1
        return true
    }
}
