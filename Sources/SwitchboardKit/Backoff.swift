/// Exponential backoff with full jitter: attempt n waits a random time in
/// `[0, min(maximum, base × 2^n)]` (at least `floor`), so reconnecting clients spread out.
public struct Backoff: Sendable, Equatable {
    public var base: Duration
    public var maximum: Duration
    public var floor: Duration

    public init(base: Duration = .milliseconds(250), maximum: Duration = .seconds(10), floor: Duration = .milliseconds(50)) {
        self.base = base
        self.maximum = maximum
        self.floor = floor
    }

    /// The ceiling of attempt `attempt` (0-based) before jitter.
    public func ceiling(attempt: Int) -> Duration {
        let factor = 1 << min(max(attempt, 0), 30)
        let grown = base * factor
        return grown > maximum ? maximum : grown
    }

    /// The delay of attempt `attempt`, with `unit` a random number in `[0, 1)`.
    public func delay(attempt: Int, unit: Double) -> Duration {
        let scaled = ceiling(attempt: attempt) * min(max(unit, 0), 1)
        return scaled < floor ? floor : scaled
    }
}
