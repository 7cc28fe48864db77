import CoreMetrics
import SwitchboardCore

/// The hub's metrics, through swift-metrics with an injected factory (so each daemon, and each
/// test, has its own registry). Updated once per batch from the relay's counters.
///
/// Touched only on the hub's queue.
final class HubMetrics {
    private let factory: any MetricsFactory
    private let sockets: Gauge
    private let peers: Gauge
    private let queuedMessages: Gauge
    private let queuedBytes: Gauge
    private let relayed: [PeerJSMessageType: Counter]
    private let queued: Counter
    private let expired: Counter
    private let overflowed: Counter
    private let malformed: Counter
    private let timedOut: Counter
    private let rateLimited: Counter
    private var refused: [String: Counter] = [:]
    let batchDuration: Timer
    private var last = RelayStats()

    init(factory: any MetricsFactory) {
        self.factory = factory
        sockets = Gauge(label: "switchboard_connections", dimensions: [("kind", "peerjs")], factory: factory)
        peers = Gauge(label: "switchboard_peerjs_peers", factory: factory)
        queuedMessages = Gauge(label: "switchboard_peerjs_queue_messages", factory: factory)
        queuedBytes = Gauge(label: "switchboard_peerjs_queue_bytes", factory: factory)
        relayed = Dictionary(uniqueKeysWithValues: PeerJSMessageType.allCases.map {
            ($0, Counter(label: "switchboard_messages_relayed_total", dimensions: [("type", $0.rawValue)], factory: factory))
        })
        queued = Counter(label: "switchboard_peerjs_queued_total", factory: factory)
        expired = Counter(label: "switchboard_peerjs_expired_total", factory: factory)
        overflowed = Counter(label: "switchboard_peerjs_queue_overflow_total", factory: factory)
        malformed = Counter(label: "switchboard_bad_frames_total", factory: factory)
        timedOut = Counter(label: "switchboard_peerjs_alive_timeouts_total", factory: factory)
        rateLimited = Counter(label: "switchboard_rate_limited_total", dimensions: [("kind", "peerjs_message")], factory: factory)
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
            relayed[type]?.increment(by: count - last.relayed[type, default: 0])
        }
        bump(queued, stats.queued, last.queued)
        bump(expired, stats.expired, last.expired)
        bump(overflowed, stats.overflowed, last.overflowed)
        bump(malformed, stats.malformed, last.malformed)
        bump(timedOut, stats.timedOut, last.timedOut)
        bump(rateLimited, stats.rateLimited, last.rateLimited)
        for (reason, count) in stats.refused where count != last.refused[reason, default: 0] {
            counter(&refused, reason, "switchboard_peerjs_refused_total", "reason", reason)
                .increment(by: count - last.refused[reason, default: 0])
        }
        last = stats
    }

    private var refusals: [String: Counter] = [:]

    /// Counts a socket refused by a connection cap, by which one.
    func recordRefusal(_ refusal: ConnectionLimiter.Refusal) {
        counter(&refusals, refusal.rawValue, "switchboard_connections_refused_total", "reason", refusal.rawValue).increment()
    }

    private func bump(_ counter: Counter, _ now: Int, _ before: Int) {
        if now > before { counter.increment(by: now - before) }
    }

    private func counter<Key: Hashable>(
        _ cache: inout [Key: Counter], _ key: Key, _ label: String, _ dimension: String, _ value: String
    ) -> Counter {
        if let existing = cache[key] { return existing }
        let created = Counter(label: label, dimensions: [(dimension, value)], factory: factory)
        cache[key] = created
        return created
    }
}
