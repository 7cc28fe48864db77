import CoreMetrics
import SwitchboardCore

/// Call-protocol metrics: connections, live calls, rings by outcome, ring-to-answer latency,
/// joins, auth failures by reason, commit time. Touched only on the call hub's queue.
final class CallMetrics {
    private let connections: Gauge
    private let pendingConnections: Gauge
    private let callsLive: Gauge
    private let sessions: Gauge
    private let joins: Counter
    private let callsStarted: Counter
    private let ringAnswer: Timer
    let commit: Timer
    /// Calls this node took over from a node whose lease lapsed (ADR 0012).
    let callsTakenOver: Counter
    /// Call requests sent to the node running their call, and run here for another node's client.
    let forwardedOut: Counter
    let forwardedIn: Counter
    /// Client connections taken over from the store by a resume, and connections no live node
    /// held whose sessions this node ended (ADR 0012).
    let connectionsTakenOver: Counter
    let connectionsOrphaned: Counter
    private let limitedRequests: Counter
    private let ended: LabelledCounters
    private let rings: LabelledCounters
    private let authFailures: LabelledCounters

    init(factory: any MetricsFactory) {
        connections = Gauge(label: "switchboard_connections", dimensions: [("kind", "call")], factory: factory)
        pendingConnections = Gauge(label: "switchboard_connections", dimensions: [("kind", "call_authenticating")], factory: factory)
        callsLive = Gauge(label: "switchboard_calls_live", factory: factory)
        sessions = Gauge(label: "switchboard_call_sessions", factory: factory)
        joins = Counter(label: "switchboard_call_joins_total", factory: factory)
        callsStarted = Counter(label: "switchboard_calls_started_total", factory: factory)
        callsTakenOver = Counter(label: "switchboard_call_takeovers_total", factory: factory)
        forwardedOut = Counter(label: "switchboard_call_requests_forwarded_total", dimensions: [("direction", "out")], factory: factory)
        forwardedIn = Counter(label: "switchboard_call_requests_forwarded_total", dimensions: [("direction", "in")], factory: factory)
        connectionsTakenOver = Counter(label: "switchboard_connection_takeovers_total", factory: factory)
        connectionsOrphaned = Counter(label: "switchboard_connections_orphaned_total", factory: factory)
        ringAnswer = Timer(label: "switchboard_ring_answer_seconds", factory: factory)
        limitedRequests = Counter(label: "switchboard_rate_limited_total", dimensions: [("kind", "call_request")], factory: factory)
        commit = Timer(label: "switchboard_sqlite_commit_seconds", dimensions: [("table", "calls")], factory: factory)
        ended = LabelledCounters("switchboard_calls_ended_total", by: "reason", factory: factory)
        rings = LabelledCounters("switchboard_rings_total", by: "outcome", factory: factory)
        authFailures = LabelledCounters("switchboard_auth_failures_total", by: "reason", factory: factory)
    }

    func record(_ events: [CallMetricEvent], authFailures failures: [String], limited: Int = 0) {
        if limited > 0 { limitedRequests.increment(by: limited) }
        for event in events {
            switch event {
            case .callStarted: callsStarted.increment()
            case .joined: joins.increment()
            case .callEnded(let reason):
                ended.increment(reason.rawValue)
            case .ringOutcome(let outcome, let answeredAfter):
                rings.increment(outcome)
                if let answeredAfter { ringAnswer.recordNanoseconds(answeredAfter.nanoseconds) }
            }
        }
        for reason in failures { authFailures.increment(reason) }
    }

    func update(from gateway: CallGateway) {
        connections.record(gateway.socketCount)
        pendingConnections.record(gateway.pendingCount)
        callsLive.record(gateway.engine.liveCallCount)
        sessions.record(gateway.engine.sessionCount)
    }

}
