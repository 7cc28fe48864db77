import CoreMetrics
import SwitchboardCore

/// The hub's metrics, through swift-metrics with an injected factory (so each daemon, and each
/// test, has its own registry). Updated once per batch from the relay's counters.
///
/// Touched only on the hub's queue.
final class HubMetrics {
    private let sockets: Gauge
    private let peers: Gauge
    private let queuedMessages: Gauge
    private let queuedBytes: Gauge
    private let relayed: LabelledCounters
    private let queued: Counter
    private let expired: Counter
    private let overflowed: Counter
    private let malformed: Counter
    private let timedOut: Counter
    private let rateLimited: Counter
    private let refused: LabelledCounters
    private let refusals: LabelledCounters
    let batchDuration: Timer
    private var last = RelayStats()

    init(factory: any MetricsFactory) {
        sockets = Gauge(label: "switchboard_connections", dimensions: [("kind", "peerjs")], factory: factory)
        peers = Gauge(label: "switchboard_peerjs_peers", factory: factory)
        queuedMessages = Gauge(label: "switchboard_peerjs_queue_messages", factory: factory)
        queuedBytes = Gauge(label: "switchboard_peerjs_queue_bytes", factory: factory)
        relayed = LabelledCounters(
            "switchboard_messages_relayed_total", by: "type", factory: factory, precreating: PeerJSMessageType.allCases.map(\.rawValue))
        queued = Counter(label: "switchboard_peerjs_queued_total", factory: factory)
        expired = Counter(label: "switchboard_peerjs_expired_total", factory: factory)
        overflowed = Counter(label: "switchboard_peerjs_queue_overflow_total", factory: factory)
        malformed = Counter(label: "switchboard_bad_frames_total", factory: factory)
        timedOut = Counter(label: "switchboard_peerjs_alive_timeouts_total", factory: factory)
        rateLimited = Counter(label: "switchboard_rate_limited_total", dimensions: [("kind", "peerjs_message")], factory: factory)
        refused = LabelledCounters("switchboard_peerjs_refused_total", by: "reason", factory: factory)
        refusals = LabelledCounters("switchboard_connections_refused_total", by: "reason", factory: factory)
        batchDuration = Timer(label: "switchboard_handler_duration_seconds", dimensions: [("handler", "signaling_batch")], factory: factory)
    }

    /// Publishes what changed in `relay` since the last call.
    func update(from relay: PeerRelay) {
        let stats = relay.stats
        sockets.record(relay.socketCount)
        peers.record(relay.registeredCount)
        queuedMessages.record(relay.queueDepth.messages)
        queuedBytes.record(relay.queueDepth.bytes)
        for (type, count) in stats.relayed where count != last.relayed[type, default: 0] {
            relayed.increment(type.rawValue, by: count - last.relayed[type, default: 0])
        }
        bump(queued, stats.queued, last.queued)
        bump(expired, stats.expired, last.expired)
        bump(overflowed, stats.overflowed, last.overflowed)
        bump(malformed, stats.malformed, last.malformed)
        bump(timedOut, stats.timedOut, last.timedOut)
        bump(rateLimited, stats.rateLimited, last.rateLimited)
        for (reason, count) in stats.refused where count != last.refused[reason, default: 0] {
            refused.increment(reason, by: count - last.refused[reason, default: 0])
        }
        last = stats
    }

    /// Counts a socket refused by a connection cap, by which one.
    func recordRefusal(_ refusal: ConnectionLimiter.Refusal) {
        refusals.increment(refusal.rawValue)
    }

    private func bump(_ counter: Counter, _ now: Int, _ before: Int) {
        if now > before { counter.increment(by: now - before) }
    }

}
