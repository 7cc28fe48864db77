import CoreMetrics
import Dispatch
import Foundation
import Logging
import SwitchboardApp
import SwitchboardCore
import SwitchboardPostgres
import Synchronization

/// Every daemon of a cluster serves clients (ADR 0012, `store.postgres_standby` relay): one that
/// does not lead relays its sockets and requests to the leading daemon over the database's bus,
/// and the leader runs them through its hubs as if they were its own.
///
/// It sits between the transport and the hubs, on both sides: the transport's sink (events in)
/// and the hubs' transport (commands out). On the leader, a batch with no relayed connection
/// passes straight through. The pure halves, ``TunnelFront`` and ``TunnelLeader``, decide; this
/// class holds them under a lock, sends their batches on the bus in order per node, and watches
/// the nodes and the bus.
final class ClusterTunnel: TransportEventSink, OutboundTransport, @unchecked Sendable {
    enum Role {
        /// Relaying to the leader the front follows.
        case front
        /// Just took the lead; the hubs are not attached yet: sockets and requests are refused.
        case switching
        /// Leading: events go to `hub`; relayed batches of `generation` are taken.
        case leader(hub: any TransportEventSink, generation: Int64)
    }

    struct State {
        var role: Role = .front
        var front: TunnelFront
        var leader = TunnelLeader()
        /// The batches on their way to each node, in order.
        var outboxes: [String: TunnelOutbox] = [:]
        /// Whether the bus listens now (between a `LISTEN` in place and its connection's loss).
        var listenerUp = false
        /// Whether the followed leader's lease had lapsed at the last turn.
        var leaderLapsed = false
        var stopped = false
        var lastNodeCheck: MonotonicTime
        var lastPing: MonotonicTime
        /// When the standby's loop began the last turn that renewed this node and read the
        /// leader: the node lease runs at least a lease from then.
        var confirmed: MonotonicTime
        /// A front told to drain (`POST /v1/drain` on it) closes new sockets with 1001.
        var draining = false
        /// Whether a send of the leader's waiting reports is scheduled (``reportDelay`` from the first).
        var reportsScheduled = false
        /// This node's own call hub and the path of its sockets, when calls run on every node
        /// (``keepCallsLocal(path:hub:)``), and the sockets it holds.
        var localCalls: (path: String, hub: any TransportEventSink)?
        var localSockets: Set<ConnectionID> = []
        /// The other live nodes as last read (``peers``), and when, once asked to keep them.
        var peers: [String] = []
        var peersReadAt: MonotonicTime?
        var keepsPeers = false
        /// Whether the peers were greeted again once this node was registered.
        var greetedRegistered = false
        /// The notices to the leader queued and not sent yet (one of a kind is enough).
        var noticesQueued: Set<LeaderNotice> = []
        /// On the leader: hears other nodes' notices (``onLeaderNotice(_:)``).
        var leaderNotices: (@Sendable (LeaderNotice) -> Void)?
    }

    let node: String
    let bus: any NodeBus
    let local: any OutboundTransport
    let clock: any MonotonicClockSource
    let logger: Logger
    let state: Mutex<State>
    let forwarded: Counter
    let returned: Counter
    let dropped: Counter
    let roundTrip: CoreMetrics.Timer
    /// The nodes whose lease runs (the leader drops relayed connections of the others).
    var liveNodes: (@Sendable () throws -> Set<String>)?
    /// Answers a front's own admin routes (`/healthz`, `/readyz`, `/metrics`).
    var frontAdmin: (@Sendable (HTTPRequest) -> HTTPResponse)?
    /// Takes the batches of calls other nodes send this one (its call hub's
    /// ``CallHub/forwardArrived(_:from:)``); set before ``start(timer:)``.
    var callsArrived: (@Sendable (CallForwardBatch, String) -> Void)?
    private var runTask: Task<Void, Never>?
    private var timer: (any DispatchSourceTimer)?
    let checkEvery: Duration
    let lease: Duration
    /// How long a leader's handled counts wait for a batch of commands going to their node
    /// before they go alone: sent at once, a report took the bus just as the answer to the same
    /// message came, and delayed it by a send (~0.25 ms a relayed leg, measured).
    let reportDelay: Duration
    /// How long a front goes without a turn renewing its node before it takes its node lease for
    /// lapsed (a little less than a lease, so it cuts its sockets before the leader drops them).
    var unrenewedLimit: Duration { lease - min(lease / 4, .milliseconds(500)) }

    /// The admin paths a relaying node answers itself: about itself, not the leader (a drain
    /// drains this node only).
    static let ownAdminPaths: Set<String> = ["/healthz", "/readyz", "/metrics", "/v1/drain"]

    init(
        bus: any NodeBus, local: any OutboundTransport, lease: Duration, clock: any MonotonicClockSource = SystemMonotonicClock(),
        factory: any MetricsFactory, logger: Logger, reportDelay: Duration = .milliseconds(5)
    ) {
        self.reportDelay = reportDelay
        self.node = bus.node
        self.bus = bus
        self.local = local
        self.clock = clock
        self.logger = logger
        self.checkEvery = lease / 3
        self.lease = lease
        let now = clock.now()
        state = Mutex(State(front: TunnelFront(requestTimeout: .seconds(10)), lastNodeCheck: now, lastPing: now, confirmed: now))
        forwarded = Counter(label: "switchboard_cluster_relayed_total", dimensions: [("direction", "to_leader")], factory: factory)
        returned = Counter(label: "switchboard_cluster_relayed_total", dimensions: [("direction", "from_leader")], factory: factory)
        dropped = Counter(label: "switchboard_cluster_relay_failures_total", dimensions: [], factory: factory)
        roundTrip = CoreMetrics.Timer(label: "switchboard_cluster_relay_round_trip_seconds", dimensions: [], factory: factory)
    }

    /// Listens on the bus and starts the timer (request deadlines, the probe, the node checks);
    /// without `timer`, a test calls ``tick()`` itself.
    func start(timer startsTimer: Bool = true) {
        runTask = Task { [self] in
            await bus.run(listening: { self.listenerStarted() }, lost: { self.listenerLost() }, deliver: { self.deliver($0) })
        }
        guard startsTimer else { return }
        let timer = DispatchSource.makeTimerSource(queue: DispatchQueue(label: "switchboard.cluster-tunnel"))
        timer.schedule(deadline: .now() + .milliseconds(250), repeating: .milliseconds(250))
        timer.setEventHandler { [weak self] in self?.tick() }
        timer.resume()
        self.timer = timer
    }

    /// Sends what is queued, then stops listening and sending.
    func stop() async {
        timer?.cancel()
        let outboxes = state.withLock { state in
            state.stopped = true
            defer { state.outboxes = [:] }
            return Array(state.outboxes.values)
        }
        for outbox in outboxes { await outbox.finish() }
        runTask?.cancel()
        await runTask?.value
        await bus.close()
    }

    /// A leader that stops closes the sockets relayed to it with `code` (1001: clients reconnect
    /// to whichever daemon leads next), so they need not wait for their daemon to see it go.
    func closeRelayed(_ code: CloseCode, reason: String) {
        state.withLock { state in
            guard case .leader(_, let generation) = state.role else { return }
            let ids = state.leader.nodes.flatMap { state.leader.connections(of: $0) }
            let split = state.leader.outbound(ids.sorted().map { .close($0, code, reason: reason) })
            for (node, commands) in split.remote {
                enqueue(&state, to: node, kind: TunnelBatch.commandsKind, TunnelBatch(generation: generation, commands: commands))
            }
        }
    }

    /// Whether the bus listens (a front is ready only then).
    var listening: Bool { state.withLock { $0.listenerUp } }

    /// From now on this front closes new sockets with 1001 and fails `/readyz` (its relayed
    /// sockets carry on). A leader drains through its hub instead.
    func beginDraining() {
        state.withLock { $0.draining = true }
    }

    /// Whether this front was told to drain.
    var draining: Bool { state.withLock { $0.draining } }

    /// Whether this node leads (its hubs are attached).
    var leads: Bool {
        state.withLock { state in
            if case .leader = state.role { return true }
            return false
        }
    }

    /// The leader a front relays to, if any, while its lease runs (the front takes new sockets).
    var following: TunnelFront.Leader? { state.withLock { $0.front.paused ? nil : $0.front.leader } }

    // MARK: - Roles

    /// A front follows `leader` (`nil`: nobody leads), as the standby's turn begun at
    /// `renewedAt` (on ``clock``; `nil`: now) read it right after renewing this node. While its
    /// lease has `lapsed` (and nobody took over) the front keeps its sockets on it but takes no
    /// new ones, and is not ready.
    func follow(_ leader: TunnelFront.Leader?, lapsed: Bool = false, renewedAt: MonotonicTime? = nil) {
        let now = clock.now()
        let renewedAt = renewedAt ?? now
        let commands = state.withLock { state -> [OutboundCommand] in
            guard case .front = state.role else { return [] }
            guard now.since(renewedAt) < unrenewedLimit else {
                // The turn itself took nearly a lease: this node's lease may have lapsed before
                // it was renewed, and the leader dropped what it relays. As when no turn comes.
                return cutOffUnrenewed(&state)
            }
            state.confirmed = max(state.confirmed, renewedAt)
            state.leaderLapsed = lapsed
            state.front.paused = lapsed || !state.listenerUp
            if leader != state.front.leader {
                logger.notice("relaying to the leading node", metadata: ["leader": "\(leader?.node ?? "none")", "generation": "\(leader?.generation ?? 0)"])
            }
            return state.front.follow(leader)
        }
        _ = local.submit(commands)
        // This node is registered now (the turn renewed it): the nodes that read before it did
        // hear of it.
        if state.withLock({ state in defer { state.greetedRegistered = true }; return !state.greetedRegistered }) { greetPeers() }
    }

    /// This node took the lead: its relayed sockets are cut off (1012) and, until the hubs are
    /// attached, new ones are refused.
    func becameLeader() {
        let commands = state.withLock { state -> [OutboundCommand] in
            state.role = .switching
            return state.front.follow(nil)
        }
        _ = local.submit(commands)
    }

    /// The hubs are ready: events go to `hub`, relayed batches of `generation` are taken.
    func lead(hub: any TransportEventSink, generation: Int64) {
        state.withLock { $0.role = .leader(hub: hub, generation: generation) }
        if state.withLock({ state in defer { state.greetedRegistered = true }; return !state.greetedRegistered }) { greetPeers() }
    }

    // MARK: - TransportEventSink (this node's transport)

    func transportDidReceive(_ events: [TransportEvent]) {
        let (role, events) = keepingLocal(events)
        if case .leader(let hub, _) = role {
            if !events.isEmpty { hub.transportDidReceive(events) }
            return
        }
        var relayed: [TransportEvent] = []
        var commands: [OutboundCommand] = []
        for event in events {
            if case .request(let id, let request) = event, request.listener == .admin, Self.ownAdminPaths.contains(request.path), let frontAdmin {
                DispatchQueue.global().async { [local] in _ = local.submit([.respond(id, frontAdmin(request))]) }
                continue
            }
            relayed.append(event)
        }
        // The batch's messages count against their sockets' inbound limit until the leader's
        // hubs handled them (or, with a leader that does not report, until the bus took them):
        // a socket that sends faster than the leader works is paused by this node's transport.
        let output = state.withLock { state -> TunnelFront.Output in
            switch state.role {
            case .front:
                let output = state.draining
                    ? TunnelFront.draining(relayed, into: &state.front, now: clock.now()) : state.front.received(relayed, now: clock.now())
                if let (leader, batch) = output.toLeader {
                    let onSend = output.handledOnSend
                    var release: (@Sendable () -> Void)?
                    if !onSend.isEmpty { release = { [local] in local.processed(onSend) } }
                    enqueue(&state, to: leader.node, kind: TunnelBatch.eventsKind, batch, onSent: release)
                }
                return output
            default:
                return TunnelFront.refusingAll(relayed)
            }
        }
        if let batch = output.toLeader?.batch { forwarded.increment(by: batch.events.count) }
        commands += output.local
        _ = local.submit(commands)
        if !output.handled.isEmpty { local.processed(output.handled) }
    }

    // MARK: - OutboundTransport (the leader's hubs)

    func submit(_ commands: [OutboundCommand]) -> Set<ConnectionID> {
        guard commands.contains(where: { TunnelLeader.isRelayed($0.connection) }) else { return local.submit(commands) }
        let own = state.withLock { state -> [OutboundCommand] in
            guard case .leader(_, let generation) = state.role else { return [] }
            let split = state.leader.outbound(commands)
            for (node, theirs) in split.remote {
                // Handled counts waiting for this node ride along (``reportDelay``).
                let batch = TunnelBatch(generation: generation, commands: theirs, handled: state.leader.takeReports(for: node))
                enqueue(&state, to: node, kind: TunnelBatch.commandsKind, batch)
                returned.increment(by: theirs.count)
            }
            return split.local
        }
        return own.isEmpty ? [] : local.submit(own)
    }

    /// The hubs handled `events`: this node's transport is told of its own; the relaying nodes
    /// hear of theirs (``TunnelLeader/handled(_:)``).
    func processed(_ events: [TransportEvent]) {
        guard events.contains(where: { TunnelLeader.isRelayed($0.connection) }) else { return local.processed(events) }
        local.processed(events.filter { !TunnelLeader.isRelayed($0.connection) })
        state.withLock { state in
            state.leader.handled(events)
            scheduleReports(&state)
        }
    }
}

extension TransportEvent {
    /// The connection the event is about.
    var connection: ConnectionID {
        switch self {
        case .opened(let id, _), .message(let id, _, _), .closed(let id), .request(let id, _): id
        }
    }
}
