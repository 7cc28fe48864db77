import CoreMetrics
import Dispatch
import Foundation
import Logging
import SwitchboardCore
import SwitchboardPostgres
import Synchronization

/// This daemon's place among the daemons of one PostgreSQL database (ADR 0012). It registers
/// its node and, while another node leads, stands by: it renews its node row and tries to take
/// the lead every third of a lease, so it takes over within about a lease and a third of the
/// leader's death. Once it leads, its writes carry the leadership's generation
/// (``PostgresStore/fence``) and it renews the lease every third of it. Deposed (another node
/// took the lead while this one's lease had lapsed: it was frozen or cut off), it calls
/// ``onDeposed`` once: the daemon stops and exits, to come back as a standby.
final class StoreLease: Sendable {
    let store: PostgresStore
    let node: String
    let lease: Duration
    private let logger: Logger
    private let takeovers: Counter
    private let generationGauge: Gauge
    private let wake = DispatchSemaphore(value: 0)
    private let state = Mutex(State())

    private struct State {
        var timer: (any DispatchSourceTimer)?
        var leading: PostgresStore.Fence?
        var lastRenewed = ContinuousClock.now
        var description = ""
        var cancelled = false
        var deposed = false
        var onDeposed: (@Sendable () -> Void)?
        var sockets: @Sendable () -> Int = { 0 }
    }

    /// Thrown by ``start(description:cancelled:)`` when the daemon was told to stop while it
    /// stood by.
    struct Cancelled: Error {}

    private let now: @Sendable () -> Date

    /// How this node runs calls (`store.postgres_calls`), written with its row.
    let calls: String?

    init(
        store: PostgresStore, node: String, lease: Duration = .seconds(10), now: @escaping @Sendable () -> Date = { Date() }, calls: String? = nil,
        factory: any MetricsFactory, logger: Logger
    ) {
        self.store = store
        self.node = node
        self.calls = calls
        self.now = now
        self.lease = lease
        self.logger = logger
        takeovers = Counter(label: "switchboard_leader_takeovers_total", dimensions: [], factory: factory)
        generationGauge = Gauge(label: "switchboard_leader_generation", dimensions: [], factory: factory)
    }

    /// Whether this daemon leads and may act: its lease renewed within its length.
    var held: Bool {
        state.withLock { $0.leading != nil && !$0.deposed && ContinuousClock.now - $0.lastRenewed < lease }
    }

    /// The leadership this daemon holds (`nil` while it stands by or after it was deposed).
    var leading: PostgresStore.Fence? { state.withLock { $0.deposed ? nil : $0.leading } }

    /// How many client sockets this node holds, written with each renewal (`GET /v1/nodes`).
    func countSockets(_ count: @escaping @Sendable () -> Int) {
        state.withLock { $0.sockets = count }
    }

    /// Called once, on a queue of its own, when another node took the lead from this one.
    func onDeposed(_ handler: @escaping @Sendable () -> Void) {
        state.withLock { $0.onDeposed = handler }
    }

    /// Registers this node and returns once it leads, standing by as long as another node's
    /// lease runs. Throws ``Cancelled`` when ``cancel()`` is called (or `cancelled` says so)
    /// first; an unreachable database is tried again at the next turn.
    ///
    /// Each turn on a standby that renewed this node tells `follow` the leader row as it reads it
    /// (`nil`: nobody ever led), its lease lapsed or not, and when the turn began (this node's
    /// lease runs at least a lease from then): a relaying standby sends its clients there. A
    /// lapsed lease alone changes nothing for them: the leader may only be slow to renew, and
    /// until another node takes over, it is the one that runs the calls.
    func start(
        description: String, cancelled: @escaping @Sendable () -> Bool = { false },
        follow: @Sendable (_ leader: Leadership?, _ lapsed: Bool, _ turn: ContinuousClock.Instant) -> Void = { _, _, _ in }
    ) throws {
        state.withLock { $0.description = description }
        let every = lease / 3
        var standingBy = false
        var unreachable = false
        while true {
            if cancelled() || state.withLock({ $0.cancelled }) {
                try? store.removeNode(id: node)
                throw Cancelled()
            }
            let turn = ContinuousClock.now
            do {
                try store.renewNode(id: node, description: description, lease: lease, sockets: state.withLock { $0.sockets }(), calls: calls)
                if let leadership = try store.claimLeadership(node: node, lease: lease) {
                    lead(leadership)
                    return
                }
                let cluster = try store.cluster()
                let leader = cluster.leader
                follow(leader, leader.map { $0.leaseUntil <= cluster.now } ?? false, turn)
                if !standingBy, let leader {
                    standingBy = true
                    logger.notice(
                        "standing by: another node leads this PostgreSQL database; taking over when its lease lapses",
                        metadata: ["node": "\(node)", "leader": "\(leader.node)", "generation": "\(leader.generation)"])
                }
                unreachable = false
            } catch {
                if !unreachable {
                    logger.error("PostgreSQL database unreachable while standing by; trying again", metadata: ["error": "\(error)"])
                    unreachable = true
                }
            }
            _ = wake.wait(timeout: .now() + .milliseconds(Int(every.milliseconds)))
        }
    }

    /// Ends a standby wait (``start(description:cancelled:)`` throws ``Cancelled``).
    func cancel() {
        state.withLock { $0.cancelled = true }
        wake.signal()
    }

    private func lead(_ leadership: Leadership) {
        let fence = leadership.fence
        store.onFenced = { [weak self] _ in self?.depose("a write found another node leading") }
        store.fence = fence
        generationGauge.record(leadership.generation)
        if leadership.generation > 1 { takeovers.increment() }
        let every = lease / 3
        state.withLock { state in
            let timer = DispatchSource.makeTimerSource(queue: DispatchQueue(label: "switchboard.store-lease"))
            timer.schedule(deadline: .now() + .milliseconds(Int(every.milliseconds)), repeating: .milliseconds(Int(every.milliseconds)))
            timer.setEventHandler { [weak self] in self?.renew() }
            state.timer = timer
            state.leading = fence
            state.lastRenewed = .now
            timer.resume()
        }
        // Who led when, in the audit log every node shares: with the fence, the record that no
        // two nodes acted at once.
        do {
            _ = try store.append(
                AuditEntry(at: now(), actor: "node \(node)", action: "cluster.lead", target: node, detail: "generation \(leadership.generation)"))
        } catch {
            logger.warning("could not record the lead in the audit log", metadata: ["error": "\(error)"])
        }
        logger.notice(
            "leading the PostgreSQL database", metadata: ["node": "\(node)", "generation": "\(leadership.generation)", "lease": "\(lease)"])
    }

    private func renew() {
        let (fence, description, sockets) = state.withLock { ($0.leading, $0.description, $0.sockets) }
        guard let fence else { return }
        do {
            try? store.renewNode(id: node, description: description, lease: lease, sockets: sockets(), calls: calls)
            if try store.renewLeadership(fence, lease: lease) {
                state.withLock { $0.lastRenewed = .now }
            } else {
                depose("its lease was taken over")
            }
        } catch {
            logger.error("could not renew the lead of the PostgreSQL database", metadata: ["node": "\(node)", "error": "\(error)"])
        }
    }

    /// Another node leads now: stop renewing, stop writing (the store's fence refuses anyway)
    /// and tell the daemon, once.
    private func depose(_ why: String) {
        let handler: (@Sendable () -> Void)? = state.withLock { state in
            guard !state.deposed else { return nil }
            state.deposed = true
            state.timer?.cancel()
            state.timer = nil
            return state.onDeposed ?? {}
        }
        guard let handler else { return }
        logger.critical(
            "another node took the lead of the PostgreSQL database while this one's lease had lapsed; stopping",
            metadata: ["node": "\(node)", "why": "\(why)"])
        DispatchQueue.global().async(execute: handler)
    }

    /// Stops renewing and gives the lead up (a standby takes it at its next try) and the node
    /// row (the node is gone, not dead).
    func stop() {
        let (fence, deposed) = state.withLock { state in
            // Cancelling does not wait for a renewal under way (which takes this lock).
            state.timer?.cancel()
            state.timer = nil
            defer { state.leading = nil }
            return (state.leading, state.deposed)
        }
        do {
            if let fence, !deposed { try store.releaseLeadership(fence) }
            try store.removeNode(id: node)
        } catch {
            logger.warning("could not give the lead of the PostgreSQL database up; a standby waits for the lease", metadata: ["error": "\(error)"])
        }
    }
}
