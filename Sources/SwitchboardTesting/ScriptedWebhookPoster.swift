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
    private var held: [@Sendable () -> Void] = []

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
        let waiting = lock.withLock { () -> [@Sendable () -> Void] in
            defer { held = [] }
            return held
        }
        for answer in waiting { answer() }
    }

    /// Attempts held right now.
    public var heldCount: Int { lock.withLock { held.count } }

    /// Every attempt made, oldest first.
    public var attempts: [Attempt] { lock.withLock { recorded } }

    public func post(
        _ message: WebhookMessage, to url: String, keys: [[UInt8]], now: Date, timeout: Duration,
        completion: @escaping @Sendable (WebhookScheduler.Outcome) -> Void
    ) {
        let answerNow = lock.withLock { () -> (@Sendable () -> Void)? in
            recorded.append(Attempt(messageID: message.id, type: message.type, lane: message.lane, seq: message.seq, url: url, keys: keys, body: message.body))
            let next = script.isEmpty ? fallback : script.removeFirst()
            guard holding else { return { completion(next) } }
            held.append { completion(next) }
            return nil
        }
        // Answered from another thread, as a real client answers from its event loop.
        if let answerNow { DispatchQueue.global().async { answerNow() } }
    }
}
