import CoreMetrics
import Dispatch
import Foundation
import Logging
import SwitchboardCore
import Synchronization

/// The webhook delivery worker (ADR 0011): takes the messages the call hub committed, sends
/// them with a ``WebhookPoster`` in each call's order, retries with backoff, dead-letters, and
/// commits every outcome through the same store. It runs on its ``WebhookExecutor``: in the
/// daemon the HTTP client's own event-loop thread (started and answered there, no hop between
/// threads), never the signaling or call queues. Store writes go through `commits`, a serial
/// queue of their own, so the I/O thread never waits for the batch log.
///
/// Invariant behind `@unchecked Sendable`: every stored `var` is touched only on `executor`.
public final class WebhookDispatcher: @unchecked Sendable {
    public let executor: any WebhookExecutor
    /// Every store write of the worker, in order (outcomes, admin changes).
    let commits = DispatchQueue(label: "switchboard.webhooks.commits")
    public let settings: WebhookSettings
    /// The names of the configured endpoints.
    let configured: Set<String>
    let store: any CallStore & WebhookStore
    let poster: any WebhookPoster
    let wallClock: @Sendable () -> Date
    let random: @Sendable () -> Double
    let logger: Logger
    let metrics: WebhookMetrics
    var scheduler: WebhookScheduler
    /// The next wake-up for a retry, and when it is set for (not set again for the same time).
    var timer: (any WebhookScheduledWork)?
    var timerWake: Date?
    var running = false
    /// Outcomes decided and not committed yet: committed together once the burst of answers
    /// that came back has been taken (one batch-log append for many deliveries).
    var unsaved: [CallMutation] = []
    /// Answers that came back and are not taken yet: one hop onto the executor takes them all.
    let answers = Mutex(Answers())
    /// Each endpoint's signing keys, decoded once per secret (and previous secret).
    var signingKeys: [String: SigningKeys] = [:]
    /// Deletes old finished deliveries every ``pruneInterval`` (`webhooks.retention_ms`).
    var pruneTimer: (any DispatchSourceTimer)?
    /// Attempts whose outcome has not been committed yet (and store reads under way): a test
    /// or a shutdown waits on it.
    let idle = DispatchGroup()
    /// A read of the store's pending deliveries under way (``storeChanged()``).
    var refresh = Refresh()
    /// Reads the store's pending deliveries every so often (``refreshFromStore(every:)``).
    var refreshTimer: (any DispatchSourceTimer)?

    public init(
        settings: WebhookSettings, store: any CallStore & WebhookStore, poster: any WebhookPoster,
        executor: any WebhookExecutor = DispatchWebhookExecutor(), wallClock: @escaping @Sendable () -> Date,
        random: @escaping @Sendable () -> Double = { Double.random(in: 0..<1) }, metricsFactory: any MetricsFactory = NOOPMetricsHandler.instance,
        logger: Logger
    ) {
        self.settings = settings
        self.configured = Set(settings.endpoints.map(\.name))
        self.executor = executor
        self.store = store
        self.poster = poster
        self.wallClock = wallClock
        self.random = random
        self.logger = logger
        self.metrics = WebhookMetrics(factory: metricsFactory)
        self.scheduler = WebhookScheduler(
            configuration: WebhookScheduler.Configuration(
                maxInFlightPerEndpoint: settings.maxInFlight, maximumBackoff: settings.maxBackoff, retryHorizon: settings.retryHorizon))
    }

    /// Loads endpoint states and every pending delivery from the store and starts sending.
    /// Deliveries to an endpoint no longer configured stay pending, unsent, and are logged.
    public func start() throws {
        let stored = try store.webhookEndpointStates()
        let pending = try store.pendingWebhooks()
        let started: Result<Void, SwitchboardError> = executor.sync {
            // Messages handed over before now (by the call hub's restart) are held already;
            // enqueueing them again from the store is a no-op.
            var reset: [WebhookEndpointState] = []
            for state in stored {
                if let secret = settings.endpoint(named: state.name)?.secret, let kept = state.reconciled(withConfiguredSecret: secret) {
                    reset.append(kept)
                    scheduler.updateEndpoint(kept)
                } else {
                    scheduler.updateEndpoint(state)
                }
            }
            if !reset.isEmpty {
                do throws(SwitchboardError) {
                    try applyOrThrow(reset.map { .saveWebhookEndpoint($0) })
                } catch {
                    return .failure(error)
                }
                logger.notice(
                    "the configured webhook secret changed since the last rotation: it signs now, the rotated secrets are dropped",
                    metadata: ["endpoints": "\(reset.map(\.name))"])
            }
            let known = configured
            let orphaned = pending.filter { !known.contains($0.delivery.endpoint) }
            if !orphaned.isEmpty {
                logger.warning(
                    "pending webhook deliveries to endpoints no longer configured stay unsent",
                    metadata: ["deliveries": "\(orphaned.count)", "endpoints": "\(Set(orphaned.map(\.delivery.endpoint)).sorted())"])
            }
            do throws(SwitchboardError) {
                for endpoint in settings.endpoints { _ = try keys(for: endpoint.name, now: wallClock()) }
            } catch {
                return .failure(error)
            }
            scheduler.enqueue(pending.filter { known.contains($0.delivery.endpoint) })
            running = true
            pump()
            return .success(())
        }
        try started.get()
        startPruning()
        logger.info("webhook delivery started", metadata: ["endpoints": "\(settings.endpoints.count)", "pending": "\(pending.count)"])
    }

    /// Stops starting attempts; attempts in flight finish (their outcomes are still committed).
    public func stop() {
        executor.sync {
            running = false
            timer?.cancel()
            timer = nil
            timerWake = nil
            refreshTimer?.cancel()
            refreshTimer = nil
        }
        stopPruning()
    }

    /// Waits until no attempt is in flight and every outcome is committed, at most `timeout`;
    /// `false` when an attempt still is in flight.
    public func waitForIdle(timeout: DispatchTime) -> Bool {
        let idle = self.idle.wait(timeout: timeout) == .success
        executor.sync { flush(pumping: false) }
        commits.sync {}
        return idle
    }

    /// Committed messages from the call hub (or the SFU directory): durable, to be sent.
    public func committed(_ webhooks: [PendingWebhook]) {
        let sendable = webhooks.filter { configured.contains($0.delivery.endpoint) }
        guard !sendable.isEmpty else { return }
        executor.execute { [self] in
            scheduler.enqueue(sendable)
            pump()
        }
    }

    /// Starts every attempt that is due and sets the timer for the next one. Tests driving a
    /// manual clock call it after moving the clock.
    public func pumpNow() {
        executor.sync { pump() }
    }

    func pump() {
        precondition(executor.isCurrent, "the webhook worker runs on its executor")
        guard running else { return }
        let now = wallClock()
        for attempt in scheduler.due(now: now) { send(attempt, now: now) }
        metrics.update(from: scheduler, now: now)
        let wake = scheduler.nextWake
        guard wake != timerWake || wake.map({ $0 <= now }) == true else { return }
        timer?.cancel()
        timer = nil
        timerWake = wake
        guard let wake else { return }
        let delay = max(0, wake.timeIntervalSince(now))
        timer = executor.schedule(after: .milliseconds(Int(min(delay, 86_400) * 1000) + 1)) { [weak self] in
            guard let self else { return }
            self.timer = nil
            self.timerWake = nil
            self.pump()
        }
    }

    private func send(_ attempt: PendingWebhook, now: Date) {
        let endpoint = attempt.delivery.endpoint
        idle.enter()
        guard let configured = settings.endpoint(named: endpoint), let keys = try? keys(for: endpoint, now: now) else {
            // Checked at start, so only a stored rotated secret could be unusable: the attempt
            // fails (and is retried, then dead-lettered) rather than holding its lane forever.
            logger.error("a webhook endpoint has no usable secret", metadata: ["endpoint": "\(endpoint)"])
            answered(attempt, .failed("no usable signing secret"))
            return
        }
        poster.post(attempt.message, to: configured.url, keys: keys, now: now, timeout: settings.timeout) { outcome in
            self.answered(attempt, outcome)
        }
    }

    /// An attempt's outcome, from any thread. Always taken later on the executor, even from the
    /// poster's own event loop (where it costs no wake-up): the HTTP client answers at the
    /// response's head, before it has put the connection back in its pool, and an attempt
    /// started from there would open a new connection.
    private func answered(_ attempt: PendingWebhook, _ outcome: WebhookScheduler.Outcome) {
        let first = answers.withLock { answers in
            answers.taken.append((attempt, outcome))
            defer { answers.scheduled = true }
            return !answers.scheduled
        }
        if first { executor.execute { self.takeAnswers() } }
    }

    /// Every answer that came back: their outcomes, one commit, then what is due.
    private func takeAnswers() {
        let taken = answers.withLock { answers in
            defer { answers = Answers() }
            return answers.taken
        }
        for (attempt, outcome) in taken { finish(attempt, outcome) }
        flush(pumping: true)
        for _ in taken { idle.leave() }
    }

    private func finish(_ attempt: PendingWebhook, _ outcome: WebhookScheduler.Outcome) {
        let now = wallClock()
        let delivery = attempt.delivery
        let mutations = scheduler.finished(messageID: delivery.messageID, endpoint: delivery.endpoint, outcome: outcome, now: now, random: random())
        metrics.attempt(delivery.endpoint, outcome)
        for case .saveWebhookDelivery(let updated) in mutations {
            switch updated.status {
            case .delivered:
                metrics.delivery(updated.type, "delivered")
                metrics.delivered(after: now.timeIntervalSince(updated.createdAt))
            case .dead:
                metrics.delivery(updated.type, "dead")
                logger.warning(
                    "webhook delivery dead-lettered", metadata: ["endpoint": "\(updated.endpoint)", "message": "\(updated.messageID)", "event": "\(updated.type.rawValue)"])
            case .pending:
                metrics.delivery(updated.type, scheduler.isDisabled(endpoint: updated.endpoint) ? "endpoint_gone" : "retrying")
            }
        }
        for case .saveWebhookEndpoint(let state) in mutations {
            logger.warning("webhook endpoint answered 410 Gone; disabled until enabled on the admin API", metadata: ["endpoint": "\(state.name)"])
        }
        unsaved += mutations
        if refresh.reading { refresh.finished.insert(Refresh.Key(messageID: delivery.messageID, endpoint: delivery.endpoint)) }
    }

    /// Commits the outcomes decided so far, then starts what is due. A failed commit loses only
    /// the record of attempts: those deliveries are sent again after a restart, with the same
    /// `webhook-id` (at least once).
    func flush(pumping: Bool) {
        precondition(executor.isCurrent, "the webhook worker runs on its executor")
        if !unsaved.isEmpty {
            let mutations = unsaved
            unsaved = []
            idle.enter()
            commits.async { [self] in
                do {
                    try store.apply(mutations)
                } catch {
                    logger.error("could not record webhook delivery outcomes", metadata: ["error": "\(error)", "mutations": "\(mutations.count)"])
                }
                idle.leave()
            }
        }
        if pumping { pump() }
    }

    /// The keys that sign for `endpoint` at `now`: its current secret, then the previous one
    /// while a rotation's grace runs.
    /// Decoded once per secret: the cache holds the secrets it decoded, and a rotation, or the
    /// end of its grace, changes them.
    func keys(for endpoint: String, now: Date) throws(SwitchboardError) -> [[UInt8]] {
        guard let configured = settings.endpoint(named: endpoint) else { throw SwitchboardError(.notFound, "no webhook endpoint \(endpoint)") }
        let state = scheduler.endpointState(endpoint)
        let secret = state?.secret ?? configured.secret
        var previous: String?
        if let secret = state?.previousSecret, let until = state?.previousUntil, now < until { previous = secret }
        if let cached = signingKeys[endpoint], cached.secret == secret, cached.previous == previous { return cached.keys }
        var keys = [try WebhookSignature.key(fromSecret: secret)]
        if let previous { keys.append(try WebhookSignature.key(fromSecret: previous)) }
        signingKeys[endpoint] = SigningKeys(secret: secret, previous: previous, keys: keys)
        return keys
    }

    struct SigningKeys {
        let secret: String
        let previous: String?
        let keys: [[UInt8]]
    }

    struct Answers {
        var taken: [(PendingWebhook, WebhookScheduler.Outcome)] = []
        var scheduled = false
    }
}
