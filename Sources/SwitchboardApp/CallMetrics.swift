import CoreMetrics
import SwitchboardCore

/// Call-protocol metrics: connections, live calls, rings by outcome, ring-to-answer latency,
/// joins, auth failures by reason, commit time. Touched only on the call hub's queue.
final class CallMetrics {
    private let factory: any MetricsFactory
    private let connections: Gauge
    private let pendingConnections: Gauge
    private let callsLive: Gauge
    private let sessions: Gauge
    private let joins: Counter
    private let callsStarted: Counter
    private let ringAnswer: Timer
    let commit: Timer
    private let limitedRequests: Counter
    private var ended: [String: Counter] = [:]
    private var rings: [String: Counter] = [:]
    private var authFailures: [String: Counter] = [:]

    init(factory: any MetricsFactory) {
        self.factory = factory
        connections = Gauge(label: "switchboard_connections", dimensions: [("kind", "call")], factory: factory)
        pendingConnections = Gauge(label: "switchboard_connections", dimensions: [("kind", "call_authenticating")], factory: factory)
        callsLive = Gauge(label: "switchboard_calls_live", factory: factory)
        sessions = Gauge(label: "switchboard_call_sessions", factory: factory)
        joins = Counter(label: "switchboard_call_joins_total", factory: factory)
        callsStarted = Counter(label: "switchboard_calls_started_total", factory: factory)
        ringAnswer = Timer(label: "switchboard_ring_answer_seconds", factory: factory)
        limitedRequests = Counter(label: "switchboard_rate_limited_total", dimensions: [("kind", "call_request")], factory: factory)
        commit = Timer(label: "switchboard_sqlite_commit_seconds", dimensions: [("table", "calls")], factory: factory)
    }

    func record(_ events: [CallMetricEvent], authFailures failures: [String], limited: Int = 0) {
        if limited > 0 { limitedRequests.increment(by: limited) }
        for event in events {
            switch event {
            case .callStarted: callsStarted.increment()
            case .joined: joins.increment()
            case .callEnded(let reason):
                counter(&ended, reason.rawValue, "switchboard_calls_ended_total", "reason").increment()
            case .ringOutcome(let outcome, let answeredAfter):
                counter(&rings, outcome, "switchboard_rings_total", "outcome").increment()
                if let answeredAfter { ringAnswer.recordNanoseconds(answeredAfter.nanoseconds) }
            }
        }
        for reason in failures { counter(&authFailures, reason, "switchboard_auth_failures_total", "reason").increment() }
    }

    func update(from gateway: CallGateway) {
        connections.record(gateway.socketCount)
        pendingConnections.record(gateway.pendingCount)
        callsLive.record(gateway.engine.liveCallCount)
        sessions.record(gateway.engine.sessionCount)
    }

    private func counter(_ cache: inout [String: Counter], _ key: String, _ label: String, _ dimension: String) -> Counter {
        if let existing = cache[key] { return existing }
        let created = Counter(label: label, dimensions: [(dimension, key)], factory: factory)
        cache[key] = created
        return created
    }
}
