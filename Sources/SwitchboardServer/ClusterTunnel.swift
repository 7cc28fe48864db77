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

    private struct State {
        var role: Role = .front
        var front: TunnelFront
        var leader = TunnelLeader()
        /// The batches on their way to each node, in order.
        var outboxes: [String: TunnelOutbox] = [:]
        var listened = 0
        var stopped = false
        var lastNodeCheck = ContinuousClock.now
        var lastPing = ContinuousClock.now
        /// A front told to drain (`POST /v1/drain` on it) closes new sockets with 1001.
        var draining = false
    }

    let node: String
    private let bus: PostgresBus
    private let local: any OutboundTransport
    private let clock: any MonotonicClockSource
    private let logger: Logger
    private let state: Mutex<State>
    private let forwarded: Counter
    private let returned: Counter
    private let dropped: Counter
    private let roundTrip: CoreMetrics.Timer
    /// The nodes whose lease runs (the leader drops relayed connections of the others).
    var liveNodes: (@Sendable () throws -> Set<String>)?
    /// Answers a front's own admin routes (`/healthz`, `/readyz`, `/metrics`).
    var frontAdmin: (@Sendable (HTTPRequest) -> HTTPResponse)?
    private var runTask: Task<Void, Never>?
    private var timer: (any DispatchSourceTimer)?
    private let checkEvery: Duration

    /// The admin paths a relaying node answers itself: about itself, not the leader.
    static let ownAdminPaths: Set<String> = ["/healthz", "/readyz", "/metrics"]

    init(
        bus: PostgresBus, local: any OutboundTransport, lease: Duration, clock: any MonotonicClockSource = SystemMonotonicClock(),
        factory: any MetricsFactory, logger: Logger
    ) {
        self.node = bus.node
        self.bus = bus
        self.local = local
        self.clock = clock
        self.logger = logger
        self.checkEvery = lease / 3
        state = Mutex(State(front: TunnelFront(requestTimeout: .seconds(10))))
        forwarded = Counter(label: "switchboard_cluster_relayed_total", dimensions: [("direction", "to_leader")], factory: factory)
        returned = Counter(label: "switchboard_cluster_relayed_total", dimensions: [("direction", "from_leader")], factory: factory)
        dropped = Counter(label: "switchboard_cluster_relay_failures_total", dimensions: [], factory: factory)
        roundTrip = CoreMetrics.Timer(label: "switchboard_cluster_relay_round_trip_seconds", dimensions: [], factory: factory)
    }

    /// Listens on the bus and starts the timer (request deadlines, the leader's node check).
    func start() {
        runTask = Task { [self] in
            await bus.run(listening: { self.listenerStarted() }, deliver: { self.deliver($0) })
        }
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
    var listening: Bool { state.withLock { $0.listened > 0 } }

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

    /// The leader a front relays to, if any.
    var following: TunnelFront.Leader? { state.withLock { $0.front.leader } }

    // MARK: - Roles

    /// A front follows `leader` (`nil`: none whose lease runs).
    func follow(_ leader: TunnelFront.Leader?) {
        let commands = state.withLock { state -> [OutboundCommand] in
            guard case .front = state.role else { return [] }
            if leader != state.front.leader {
                logger.notice("relaying to the leading node", metadata: ["leader": "\(leader?.node ?? "none")", "generation": "\(leader?.generation ?? 0)"])
            }
            return state.front.follow(leader)
        }
        _ = local.submit(commands)
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
    }

    // MARK: - TransportEventSink (this node's transport)

    func transportDidReceive(_ events: [TransportEvent]) {
        let role = state.withLock { $0.role }
        if case .leader(let hub, _) = role {
            hub.transportDidReceive(events)
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
        // The batch's messages count against their sockets' inbound limit until the bus took
        // them: a socket that sends faster than the bus carries is paused by the transport.
        let release: @Sendable () -> Void = { [local] in local.processed(events) }
        let output = state.withLock { state -> TunnelFront.Output in
            switch state.role {
            case .front:
                let output = state.draining
                    ? TunnelFront.draining(relayed, into: &state.front, now: clock.now()) : state.front.received(relayed, now: clock.now())
                if let (leader, batch) = output.toLeader { enqueue(&state, to: leader.node, kind: TunnelBatch.eventsKind, batch, onSent: release) }
                return output
            default:
                return TunnelFront.refusingAll(relayed)
            }
        }
        if let batch = output.toLeader?.batch { forwarded.increment(by: batch.events.count) }
        commands += output.local
        _ = local.submit(commands)
        if output.toLeader == nil { release() }
    }

    // MARK: - OutboundTransport (the leader's hubs)

    func submit(_ commands: [OutboundCommand]) -> Set<ConnectionID> {
        guard commands.contains(where: { TunnelLeader.isRelayed($0.connection) }) else { return local.submit(commands) }
        let own = state.withLock { state -> [OutboundCommand] in
            guard case .leader(_, let generation) = state.role else { return [] }
            let split = state.leader.outbound(commands)
            for (node, theirs) in split.remote {
                enqueue(&state, to: node, kind: TunnelBatch.commandsKind, TunnelBatch(generation: generation, commands: theirs))
                returned.increment(by: theirs.count)
            }
            return split.local
        }
        return own.isEmpty ? [] : local.submit(own)
    }

    func processed(_ events: [TransportEvent]) {
        local.processed(events.filter { !TunnelLeader.isRelayed($0.connection) })
    }

    // MARK: - The bus

    private func deliver(_ message: PostgresBus.Message) {
        let batch: TunnelBatch
        do {
            batch = try TunnelBatch.decode(message.body)
        } catch {
            logger.warning("dropped a tunnel message that does not decode", metadata: ["from": "\(message.from)", "error": "\(error)"])
            return
        }
        switch message.kind {
        case TunnelBatch.eventsKind:
            let (hub, mapped) = state.withLock { state -> ((any TransportEventSink)?, [TransportEvent]) in
                switch state.role {
                case .leader(let hub, let generation) where generation == batch.generation:
                    if let ping = batch.ping {
                        enqueue(&state, to: message.from, kind: TunnelBatch.commandsKind, TunnelBatch(generation: generation, pong: ping))
                    }
                    return (hub, state.leader.inbound(from: message.from, batch.events))
                case .switching:
                    // Taking the lead, hubs not attached yet: the front hears its sockets and
                    // requests refused (1013, 503) rather than waiting on them.
                    let refusals = TunnelFront.refusingAll(batch.events).local
                    if !refusals.isEmpty {
                        enqueue(&state, to: message.from, kind: TunnelBatch.commandsKind, TunnelBatch(generation: batch.generation, commands: refusals))
                    }
                    return (nil, [])
                default:
                    return (nil, [])
                }
            }
            if let hub, !mapped.isEmpty { hub.transportDidReceive(mapped) }
        case TunnelBatch.commandsKind:
            let commands = state.withLock { state -> [OutboundCommand] in
                guard case .front = state.role else { return [] }
                if let pong = batch.pong, state.front.leader == TunnelFront.Leader(node: message.from, generation: batch.generation) {
                    roundTrip.recordNanoseconds(clock.now().nanoseconds - pong)
                }
                return state.front.fromLeader(batch, node: message.from)
            }
            if !commands.isEmpty { _ = local.submit(commands) }
        default:
            logger.warning("dropped a bus message of an unknown kind", metadata: ["from": "\(message.from)", "kind": "\(message.kind)"])
        }
    }

    /// The bus listens (again, after a lost connection: messages sent meanwhile are lost, so
    /// every relayed socket is cut off and its client resumes).
    private func listenerStarted() {
        let again = state.withLock { state -> Bool in
            state.listened += 1
            return state.listened > 1
        }
        if again {
            logger.warning("the bus connection was replaced; relayed sockets are closed for their clients to resume")
            resetAll()
        }
    }

    /// Cuts every relayed socket: a front's (1012, to reconnect), or a leader's (1012 sent to the
    /// fronts holding them; their `closed` given to the hubs).
    private func resetAll() {
        let (commands, hub, closed) = state.withLock { state -> ([OutboundCommand], (any TransportEventSink)?, [TransportEvent]) in
            switch state.role {
            case .front:
                return (resetFront(&state), nil, [])
            case .leader(let hub, _):
                return ([], hub, dropNodes(&state, state.leader.nodes, notify: true))
            case .switching:
                return ([], nil, [])
            }
        }
        if !commands.isEmpty { _ = local.submit(commands) }
        if let hub, !closed.isEmpty { hub.transportDidReceive(closed) }
    }

    /// Cuts a front's sockets off its leader (1012) and tells the leader they closed.
    private func resetFront(_ state: inout State) -> [OutboundCommand] {
        let output = state.front.reset()
        if let (leader, batch) = output.toLeader { enqueue(&state, to: leader.node, kind: TunnelBatch.eventsKind, batch) }
        return output.local
    }

    /// Drops `nodes`' relayed connections; with `notify`, tells each node to close them (1012).
    private func dropNodes(_ state: inout State, _ nodes: [String], notify: Bool) -> [TransportEvent] {
        guard case .leader(_, let generation) = state.role else { return [] }
        var closed: [TransportEvent] = []
        for node in nodes {
            let ids = state.leader.connections(of: node)
            if notify, !ids.isEmpty {
                let closes = state.leader.outbound(ids.sorted().map { .close($0, .serviceRestart, reason: "the leading node lost its bus; reconnect") }).remote
                for (target, commands) in closes {
                    enqueue(&state, to: target, kind: TunnelBatch.commandsKind, TunnelBatch(generation: generation, commands: commands))
                }
            }
            closed += state.leader.drop(node: node)
        }
        return closed
    }

    /// Queues `batch` for `node`, in order after what was queued before (one outbox per node).
    private func enqueue(_ state: inout State, to node: String, kind: String, _ batch: TunnelBatch, onSent: (@Sendable () -> Void)? = nil) {
        guard !state.stopped else {
            onSent?()
            return
        }
        if let outbox = state.outboxes[node] {
            outbox.enqueue(kind: kind, batch, onSent: onSent)
            return
        }
        let outbox = TunnelOutbox(
            destination: node,
            send: { [bus, logger, from = self.node] kind, body in
                do {
                    try await bus.send(PostgresBus.Message(id: UUID().uuidString, from: from, kind: kind, body: body), to: node)
                    return true
                } catch {
                    logger.warning("a tunnel message was not sent", metadata: ["to": "\(node)", "error": "\(error)"])
                    return false
                }
            },
            failed: { [weak self] in
                self?.dropped.increment()
                self?.sendFailed(to: node)
            })
        state.outboxes[node] = outbox
        outbox.enqueue(kind: kind, batch, onSent: onSent)
    }

    /// A batch for `node` was lost: a front cuts its sockets off the leader; a leader drops the
    /// node's relayed connections (their clients resume).
    private func sendFailed(to node: String) {
        let (commands, hub, closed) = state.withLock { state -> ([OutboundCommand], (any TransportEventSink)?, [TransportEvent]) in
            switch state.role {
            case .front where state.front.leader?.node == node:
                return (resetFront(&state), nil, [])
            case .leader(let hub, _):
                return ([], hub, dropNodes(&state, [node], notify: false))
            default:
                return ([], nil, [])
            }
        }
        if !commands.isEmpty { _ = local.submit(commands) }
        if let hub, !closed.isEmpty { hub.transportDidReceive(closed) }
    }

    private func tick() {
        let (late, check) = state.withLock { state -> ([OutboundCommand], Bool) in
            switch state.role {
            case .front:
                // Once a second, a probe through the bus to the leader and back (the relay's
                // round trip, switchboard_cluster_relay_round_trip_seconds).
                if let leader = state.front.leader, state.listened > 0, ContinuousClock.now - state.lastPing >= .seconds(1) {
                    state.lastPing = .now
                    enqueue(&state, to: leader.node, kind: TunnelBatch.eventsKind, TunnelBatch(generation: leader.generation, ping: clock.now().nanoseconds))
                }
                return (state.front.tick(now: clock.now()), false)
            case .leader:
                guard !state.leader.nodes.isEmpty, ContinuousClock.now - state.lastNodeCheck >= checkEvery else { return ([], false) }
                state.lastNodeCheck = .now
                return ([], true)
            case .switching:
                return ([], false)
            }
        }
        if !late.isEmpty { _ = local.submit(late) }
        if check { dropDeadNodes() }
    }

    /// The leader drops the relayed connections of nodes whose lease lapsed (killed, cut off):
    /// their sessions go into their resume window, as a lost socket's do.
    private func dropDeadNodes() {
        guard let liveNodes, let live = try? liveNodes() else { return }
        let (hub, closed) = state.withLock { state -> ((any TransportEventSink)?, [TransportEvent]) in
            guard case .leader(let hub, _) = state.role else { return (nil, []) }
            let gone = state.leader.nodes.filter { !live.contains($0) }
            if !gone.isEmpty { logger.notice("dropping the relayed sockets of nodes whose lease lapsed", metadata: ["nodes": "\(gone)"]) }
            return (hub, dropNodes(&state, gone, notify: false))
        }
        if let hub, !closed.isEmpty { hub.transportDidReceive(closed) }
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
