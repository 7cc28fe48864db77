/// A socket's allowance of messages: a token bucket for those it may send, and a second bucket,
/// with the same rate and burst, for those it may send past that and have refused.
///
/// A client a little over its rate is only refused now and then. A socket that spends the second
/// bucket too, sending at more than twice its rate for as long as it takes to exhaust a
/// whole burst of refusals beyond their refill, is flooding, and is closed.
public struct MessageBudget: Sendable, Equatable {
    /// What to do with one message.
    public enum Verdict: Sendable, Equatable {
        /// Handle it.
        case admitted
        /// Refuse it (`rate_limited`, or drop it).
        case refused
        /// Refuse it and close the socket (1008 "message flood"); said once per socket.
        case flooding
        /// The socket is being closed for flooding: drop it without a word.
        case dropped
    }

    private var messages: TokenBucket
    private var refusals: TokenBucket
    private var flooded = false

    /// Full buckets at `now`.
    public init(rate: Double, burst: Double, now: MonotonicTime) {
        messages = TokenBucket(rate: rate, burst: burst, now: now)
        refusals = TokenBucket(rate: rate, burst: burst, now: now)
    }

    /// Spends the allowance for one message that arrived at `now`.
    public mutating func spend(now: MonotonicTime) -> Verdict {
        guard !flooded else { return .dropped }
        if messages.take(now: now) { return .admitted }
        if refusals.take(now: now) { return .refused }
        flooded = true
        return .flooding
    }
}
