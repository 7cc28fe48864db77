import Foundation
import SwitchboardCore

/// The in-memory twin of ``WebhookPoster``: answers each attempt from a script and records it.
/// An attempt can also be held until the test releases it (an attempt in flight).
public final class ScriptedWebhookPoster: WebhookPoster, @unchecked Sendable {
    /// One recorded attempt.
    public struct Attempt: Sendable, Equatable {
        public var messageID: String
        public var type: WebhookEventType
        public var lane: String
        public var seq: Int64
        public var url: String
        public var keys: [[UInt8]]
        public var body: [UInt8]
    }

    private let lock = NSLock()
    private var script: [WebhookScheduler.Outcome] = []
    private var fallback: WebhookScheduler.Outcome = .status(200)
    private var recorded: [Attempt] = []
    private var holding = false
    private var held: [CheckedContinuation<Void, Never>] = []

    public init() {}

    /// The next attempts get these outcomes, in order; after them, `then`.
    public func answer(_ outcomes: [WebhookScheduler.Outcome], then: WebhookScheduler.Outcome = .status(200)) {
        lock.withLock {
            script = outcomes
            fallback = then
        }
    }

    /// While set, attempts wait (in flight) until ``release()``.
    public var holdsAttempts: Bool {
        get { lock.withLock { holding } }
        set { lock.withLock { holding = newValue } }
    }

    /// Lets every held attempt answer.
    public func release() {
        let waiting = lock.withLock { () -> [CheckedContinuation<Void, Never>] in
            defer { held = [] }
            return held
        }
        for continuation in waiting { continuation.resume() }
    }

    /// Attempts held right now.
    public var heldCount: Int { lock.withLock { held.count } }

    /// Every attempt made, oldest first.
    public var attempts: [Attempt] { lock.withLock { recorded } }

    public func post(_ message: WebhookMessage, to url: String, keys: [[UInt8]], now: Date, timeout: Duration) async -> WebhookScheduler.Outcome {
        let (outcome, hold) = lock.withLock { () -> (WebhookScheduler.Outcome, Bool) in
            recorded.append(Attempt(messageID: message.id, type: message.type, lane: message.lane, seq: message.seq, url: url, keys: keys, body: message.body))
            let next = script.isEmpty ? fallback : script.removeFirst()
            return (next, holding)
        }
        if hold {
            await withCheckedContinuation { continuation in
                let releaseNow = lock.withLock { () -> Bool in
                    guard holding else { return true }
                    held.append(continuation)
                    return false
                }
                if releaseNow { continuation.resume() }
            }
        }
        return outcome
    }
}
