import Foundation
import HeapModule

/// Decides which webhook deliveries to attempt and when: the pending deliveries of each endpoint
/// in lanes (a call's events, or an SFU's), each lane in `seq` order with only its head in
/// flight, so a receiver gets a call's event N+1 only after event N was delivered or
/// dead-lettered; at most ``Configuration/maxInFlightPerEndpoint`` attempts per endpoint; retries
/// with exponential backoff and jitter until the retry horizon, then dead-letter.
///
/// A pure value: the host passes the time and the randomness, sends what ``due(now:)`` returns,
/// reports each attempt's outcome to ``finished(messageID:endpoint:outcome:now:random:)``,
/// commits the mutations it returns, and sleeps until ``nextWake`` (or the next outcome or
/// enqueue, whichever comes first). Only pending deliveries are held; delivered and dead ones are
/// in the store.
public struct WebhookScheduler: Sendable {
    /// Limits and timings.
    public struct Configuration: Sendable, Equatable {
        /// Attempts in flight at once per endpoint, across its lanes.
        public var maxInFlightPerEndpoint: Int
        /// The wait after the first failed attempt, before jitter; it doubles with each attempt.
        public var initialBackoff: Duration
        /// The longest wait between attempts, before jitter.
        public var maximumBackoff: Duration
        /// How long after a message's creation it is still attempted; a retry that would fall
        /// later dead-letters the delivery instead.
        public var retryHorizon: Duration

        public init(
            maxInFlightPerEndpoint: Int = 16, initialBackoff: Duration = .seconds(1), maximumBackoff: Duration = .seconds(600),
            retryHorizon: Duration = .seconds(86_400)
        ) {
            self.maxInFlightPerEndpoint = maxInFlightPerEndpoint
            self.initialBackoff = initialBackoff
            self.maximumBackoff = maximumBackoff
            self.retryHorizon = retryHorizon
        }
    }

    /// How one attempt ended.
    public enum Outcome: Sendable, Equatable {
        /// The endpoint answered with this HTTP status (redirects are not followed: a 3xx is
        /// the answer).
        case status(Int)
        /// No answer: a timeout, a refused or reset connection, a TLS failure.
        case failed(String)
    }

    public let configuration: Configuration
    private var queues: [String: EndpointQueue] = [:]
    /// The creation times of the deliveries held, oldest on top; entries of deliveries gone
    /// are dropped as they surface, so the top is always held (``dropGoneCreations()``).
    private var creations = Heap<Creation>()
    /// Pending deliveries held, those in flight included: the queue depth.
    public private(set) var pendingCount = 0
    /// Attempts started by ``due(now:)`` and not finished yet.
    public private(set) var inFlightCount = 0

    /// A scheduler with nothing pending; `endpoints` are the stored endpoint states
    /// (``WebhookStore/webhookEndpointStates()``), so an endpoint disabled before a restart stays
    /// disabled. Then ``enqueue(_:)`` the store's pending deliveries.
    public init(configuration: Configuration = Configuration(), endpoints: [WebhookEndpointState] = []) {
        self.configuration = configuration
        for state in endpoints { queues[state.name] = EndpointQueue(state: state) }
    }

    // MARK: - Queueing

    /// Adds pending deliveries, in any order: each goes to its place in its lane (`seq`, then
    /// message id). A delivery already held (same message and endpoint) and any that is not
    /// pending are ignored.
    public mutating func enqueue(_ webhooks: [PendingWebhook]) {
        for webhook in webhooks where webhook.delivery.status == .pending {
            let endpoint = webhook.delivery.endpoint
            if queues[endpoint, default: EndpointQueue(state: WebhookEndpointState(name: endpoint))].insert(webhook) {
                pendingCount += 1
                creations.insert(Creation(at: webhook.delivery.createdAt, endpoint: endpoint, messageID: webhook.delivery.messageID))
            }
        }
    }

    /// Adds the first deliveries of `message` to `endpoints` (a committed
    /// ``CallMutation/enqueueWebhook(_:endpoints:)``).
    public mutating func enqueue(_ message: WebhookMessage, endpoints: [String]) {
        enqueue(endpoints.map { PendingWebhook(delivery: WebhookDelivery(message, endpoint: $0), message: message) })
    }

    /// The attempts to start now, now marked in flight: the head of each lane whose next
    /// attempt is due (`nextAttemptAt <= now`), of endpoints not disabled, within each
    /// endpoint's in-flight limit, earliest due first per endpoint.
    public mutating func due(now: Date) -> [PendingWebhook] {
        var started: [PendingWebhook] = []
        let limit = inFlightLimit
        for endpoint in queues.keys.sorted() {
            started += queues[endpoint]?.start(now: now, limit: limit) ?? []
        }
        inFlightCount += started.count
        return started
    }

    /// The earliest time ``due(now:)`` returns something, `nil` when nothing will until an
    /// outcome, an enqueue or an ``enable(endpoint:)``. At or before `now` when something is due
    /// already. Endpoints that are disabled or at their in-flight limit do not count.
    public var nextWake: Date? {
        queues.values.compactMap { $0.nextDue(limit: inFlightLimit) }.min()
    }

    /// ``Configuration/maxInFlightPerEndpoint``, at least 1.
    private var inFlightLimit: Int { max(1, configuration.maxInFlightPerEndpoint) }

    // MARK: - Outcomes

    /// Records how the attempt of `messageID` to `endpoint` ended and returns the mutations to
    /// commit: the delivery's new state, and the endpoint's when a 410 disabled it.
    ///
    /// - 2xx: delivered; the lane moves on.
    /// - 410 Gone: the endpoint is disabled (`disabledAt = now`); the delivery stays pending,
    ///   due again once the endpoint is enabled.
    /// - Anything else: retried after ``backoff(afterAttempts:random:)``, unless that falls after
    ///   `createdAt + retryHorizon`: then dead, and the lane moves on.
    ///
    /// `random` is uniform in [0, 1): it picks the jitter. An attempt not in flight (unknown,
    /// or reported twice) is ignored: no mutations.
    public mutating func finished(messageID: String, endpoint: String, outcome: Outcome, now: Date, random: Double) -> [CallMutation] {
        guard let webhook = queues[endpoint]?.endAttempt(messageID) else { return [] }
        inFlightCount -= 1
        var delivery = webhook.delivery
        delivery.attempts += 1
        delivery.lastAttemptAt = now
        var mutations: [CallMutation] = []
        switch outcome {
        case .status(let code) where (200..<300).contains(code):
            delivery.status = .delivered
            delivery.nextAttemptAt = nil
            delivery.lastStatus = code
            delivery.lastError = nil
        case .status(410):
            delivery.lastStatus = 410
            delivery.lastError = nil
            delivery.nextAttemptAt = now
            mutations = disable(endpoint: endpoint, now: now)
        case .status(let code):
            delivery.lastStatus = code
            delivery.lastError = nil
            scheduleRetry(&delivery, now: now, random: random)
        case .failed(let reason):
            delivery.lastStatus = nil
            delivery.lastError = LogText.escape(reason, limit: 300)
            scheduleRetry(&delivery, now: now, random: random)
        }
        queues[endpoint]?.settle(PendingWebhook(delivery: delivery, message: webhook.message))
        if delivery.status != .pending {
            pendingCount -= 1
            dropGoneCreations()
        }
        return [.saveWebhookDelivery(delivery)] + mutations
    }

    /// The wait before the attempt after `attempts` failed ones: ``Configuration/initialBackoff``
    /// doubled per attempt after the first, capped at ``Configuration/maximumBackoff``, times a
    /// jitter factor of `0.5 + random / 2` (in [0.5, 1)), in seconds.
    public func backoff(afterAttempts attempts: Int, random: Double) -> TimeInterval {
        let exponent = min(max(attempts - 1, 0), 64)
        let uncapped = configuration.initialBackoff.seconds * Double(sign: .plus, exponent: exponent, significand: 1)
        let capped = min(uncapped, configuration.maximumBackoff.seconds)
        let unit = random.isFinite ? min(max(random, 0), 1) : 0
        // 0.5 + unit / 2 rounds to 1 for the largest units below 1: keep the factor below 1.
        return capped * min(0.5 + unit / 2, 1.0.nextDown)
    }

    private func scheduleRetry(_ delivery: inout WebhookDelivery, now: Date, random: Double) {
        let next = now.addingTimeInterval(backoff(afterAttempts: delivery.attempts, random: random))
        if next > delivery.createdAt.addingTimeInterval(configuration.retryHorizon.seconds) {
            delivery.status = .dead
            delivery.nextAttemptAt = nil
        } else {
            delivery.nextAttemptAt = next
        }
    }

    // MARK: - Administration

    /// An admin's retry of a dead delivery: pending again with its attempts kept, due at `now`,
    /// at its place in its lane. `stored` is the delivery as the store has it
    /// (``WebhookStore/webhook(messageID:endpoint:)``): dead ones are not held here. One attempt
    /// is made (once the endpoint is enabled, if it is disabled); if it fails past the retry
    /// horizon the delivery is dead again.
    ///
    /// Throws `.notFound` when the store has no such delivery, `.conflict` when it is not dead.
    public mutating func retry(messageID: String, endpoint: String, stored: PendingWebhook?, now: Date) throws(SwitchboardError) -> [CallMutation] {
        if queues[endpoint]?.holds(messageID) == true {
            throw SwitchboardError(.conflict, "the delivery is pending; only a dead delivery can be retried")
        }
        guard let stored, stored.delivery.messageID == messageID, stored.delivery.endpoint == endpoint else {
            throw SwitchboardError(.notFound, "no delivery of this message to this endpoint")
        }
        guard stored.delivery.status == .dead else {
            throw SwitchboardError(.conflict, "the delivery is \(stored.delivery.status.rawValue); only a dead delivery can be retried")
        }
        var delivery = stored.delivery
        delivery.status = .pending
        delivery.nextAttemptAt = now
        enqueue([PendingWebhook(delivery: delivery, message: stored.message)])
        return [.saveWebhookDelivery(delivery)]
    }

    /// Stops sending to `endpoint` (its deliveries stay pending) and returns the endpoint state
    /// to commit; nothing when it is disabled already.
    public mutating func disable(endpoint: String, now: Date) -> [CallMutation] {
        var state = queues[endpoint]?.state ?? WebhookEndpointState(name: endpoint)
        guard state.disabledAt == nil else { return [] }
        state.disabledAt = now
        updateEndpoint(state)
        return [.saveWebhookEndpoint(state)]
    }

    /// Sends to `endpoint` again: its pending deliveries are due as they were. Returns the
    /// endpoint state to commit; nothing when it was not disabled.
    public mutating func enable(endpoint: String) -> [CallMutation] {
        guard queues[endpoint]?.state.disabledAt != nil else { return [] }
        queues[endpoint]?.state.disabledAt = nil
        return queues[endpoint].map { [.saveWebhookEndpoint($0.state)] } ?? []
    }

    /// Replaces what the scheduler knows of an endpoint's state after the host committed a
    /// change of its own (a secret rotation), so the state a 410 saves carries the current
    /// secrets. Its `disabledAt` takes effect as ``disable(endpoint:now:)`` and
    /// ``enable(endpoint:)`` would, without mutations.
    public mutating func updateEndpoint(_ state: WebhookEndpointState) {
        queues[state.name, default: EndpointQueue(state: state)].state = state
    }

    /// The endpoint's state as the scheduler has it, `nil` for one it never heard of.
    public func endpointState(_ endpoint: String) -> WebhookEndpointState? { queues[endpoint]?.state }

    /// Whether a 410 or an admin stopped sending to `endpoint`.
    public func isDisabled(endpoint: String) -> Bool { queues[endpoint]?.state.disabledAt != nil }

    // MARK: - Metrics

    /// Pending deliveries to `endpoint`, those in flight included.
    public func pendingCount(endpoint: String) -> Int { queues[endpoint]?.pendingCount ?? 0 }

    /// Attempts to `endpoint` in flight.
    public func inFlightCount(endpoint: String) -> Int { queues[endpoint]?.inFlight ?? 0 }

    /// The creation time of the oldest pending delivery (the age of the queue's tail), `nil`
    /// when nothing is pending. O(1).
    public var oldestPendingCreatedAt: Date? { creations.min?.at }

    private mutating func dropGoneCreations() {
        while let top = creations.min, queues[top.endpoint]?.holds(top.messageID) != true { creations.removeMin() }
        if creations.count > 2 * pendingCount + 1024 {
            creations = Heap(queues.flatMap { endpoint, queue in
                queue.held.map { Creation(at: $0.delivery.createdAt, endpoint: endpoint, messageID: $0.delivery.messageID) }
            })
        }
    }
}
