import CoreMetrics
import Foundation
import SwitchboardCore
import Synchronization

/// Webhook delivery metrics: deliveries by event and outcome, attempts by endpoint and result,
/// the queue's depth and its oldest message's age, and the time from an event to its delivery.
/// Safe from any thread.
final class WebhookMetrics: Sendable {
    private let factory: any MetricsFactory
    private let deliveries = Mutex<[String: Counter]>([:])
    private let attempts = Mutex<[String: Counter]>([:])
    private let depth: Gauge
    private let inFlight: Gauge
    private let oldestAge: Gauge
    private let delay: CoreMetrics.Timer

    init(factory: any MetricsFactory) {
        self.factory = factory
        depth = Gauge(label: "switchboard_webhook_queue_depth", factory: factory)
        inFlight = Gauge(label: "switchboard_webhook_in_flight", factory: factory)
        oldestAge = Gauge(label: "switchboard_webhook_oldest_pending_seconds", factory: factory)
        delay = CoreMetrics.Timer(label: "switchboard_webhook_delivery_seconds", factory: factory)
    }

    /// A delivery reached `outcome`: `delivered`, `retrying`, `dead` or `endpoint_gone` (410).
    func delivery(_ type: WebhookEventType, _ outcome: String) {
        let key = type.rawValue + " " + outcome
        deliveries.withLock { counters in
            if counters[key] == nil {
                counters[key] = Counter(
                    label: "switchboard_webhook_deliveries_total", dimensions: [("event", type.rawValue), ("outcome", outcome)], factory: factory)
            }
            return counters[key]!
        }.increment()
    }

    /// One attempt to `endpoint` ended: `2xx`, `3xx`, `4xx`, `5xx` or `error` (no answer).
    func attempt(_ endpoint: String, _ outcome: WebhookScheduler.Outcome) {
        let result: String
        switch outcome {
        case .status(let code): result = "\(min(max(code / 100, 1), 5))xx"
        case .failed: result = "error"
        }
        let key = endpoint + " " + result
        attempts.withLock { counters in
            if counters[key] == nil {
                counters[key] = Counter(
                    label: "switchboard_webhook_attempts_total", dimensions: [("endpoint", endpoint), ("result", result)], factory: factory)
            }
            return counters[key]!
        }.increment()
    }

    /// From the event to its delivery.
    func delivered(after seconds: Double) {
        delay.recordNanoseconds(Int64(max(0, seconds) * 1_000_000_000))
    }

    func update(from scheduler: WebhookScheduler, now: Date) {
        depth.record(scheduler.pendingCount)
        inFlight.record(scheduler.inFlightCount)
        oldestAge.record(scheduler.oldestPendingCreatedAt.map { max(0, now.timeIntervalSince($0)) } ?? 0)
    }
}
