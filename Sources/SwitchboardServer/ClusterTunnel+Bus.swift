import CoreMetrics
import Foundation
import SwitchboardCore
import SwitchboardPostgres

/// The tunnel's side on the bus: what arrives (``deliver(_:)``), the listening connection's
/// comings and goings, the per-node outboxes, and the timer's checks (request deadlines, the
/// probe, an unrenewed node, dead relaying nodes).
extension ClusterTunnel {

    func deliver(_ message: NodeMessage) {
        heard(from: message.from)
        if message.kind == Self.helloKind { return }
        if message.kind == CallForwardBatch.messageKind { return deliverCalls(message) }
        if let notice = LeaderNotice(rawValue: message.kind) { return deliverLeaderNotice(notice, from: message.from) }
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
                    let mapped = state.leader.inbound(from: message.from, batch.events, reports: batch.reports)
                    scheduleReports(&state)
                    return (hub, mapped)
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
            let output = state.withLock { state -> TunnelFront.Output in
                guard case .front = state.role else { return TunnelFront.Output() }
                if let pong = batch.pong, state.front.leader == TunnelFront.Leader(node: message.from, generation: batch.generation) {
                    roundTrip.recordNanoseconds(clock.now().nanoseconds - pong)
                }
                return state.front.fromLeader(batch, node: message.from)
            }
            if !output.local.isEmpty { _ = local.submit(output.local) }
            if !output.handled.isEmpty { local.processed(output.handled) }
        default:
            logger.warning("dropped a bus message of an unknown kind", metadata: ["from": "\(message.from)", "kind": "\(message.kind)"])
        }
    }

    /// The bus listens (again, after a lost connection).
    func listenerStarted() {
        state.withLock { state in
            state.listenerUp = true
            state.front.paused = state.leaderLapsed
        }
    }

    /// The bus's listening connection was lost: messages sent to this node until it listens
    /// again are lost, so every relayed socket is cut off (its client resumes) and, on a front,
    /// new ones are refused until then.
    func listenerLost() {
        state.withLock { state in
            state.listenerUp = false
            state.front.paused = true
        }
        logger.warning("the bus's listening connection was lost; relayed sockets are closed for their clients to resume")
        resetAll()
    }

    /// Cuts every relayed socket: a front's (1012, to reconnect), or a leader's (1012 sent to the
    /// fronts holding them; their `closed` given to the hubs).
    func resetAll() {
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
    fileprivate func resetFront(_ state: inout State) -> [OutboundCommand] {
        let output = state.front.reset()
        if let (leader, batch) = output.toLeader { enqueue(&state, to: leader.node, kind: TunnelBatch.eventsKind, batch) }
        return output.local
    }

    /// A front not renewed for nearly a lease: its sockets are cut (1012) and the leader told
    /// they closed (it frees them, unless it dropped them already with the node's lapsed lease),
    /// and it follows nobody until a turn renews it again. The call sockets it keeps (calls run
    /// on every node) are cut too: once its lease lapses, live nodes adopt its calls and take its
    /// connections over when their clients resume there; their closes reach its call hub, which
    /// keeps the connections resumable. New ones are refused (1013) until it follows again.
    func cutOffUnrenewed(_ state: inout State) -> [OutboundCommand] {
        let commands = resetFront(&state)
        let calls = state.localSockets.sorted().map {
            OutboundCommand.close($0, .serviceRestart, reason: "this node lost its database; reconnect")
        }
        return commands + calls + state.front.follow(nil)
    }

    /// Drops `nodes`' relayed connections; with `notify`, tells each node to close them (1012).
    fileprivate func dropNodes(_ state: inout State, _ nodes: [String], notify: Bool) -> [TransportEvent] {
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

    /// Sends the reports and orphan closes after ``reportDelay`` (those whose node got a batch
    /// of commands meanwhile went with it).
    func scheduleReports(_ state: inout State) {
        guard case .leader = state.role, !state.reportsScheduled, !state.leader.reports.isEmpty || !state.leader.orphans.isEmpty else { return }
        state.reportsScheduled = true
        DispatchQueue.global().asyncAfter(deadline: .now() + .nanoseconds(Int(reportDelay.nanoseconds))) { [weak self] in
            self?.state.withLock { state in
                state.reportsScheduled = false
                self?.sendReports(&state)
            }
        }
    }

    /// A leader tells each relaying node how many of its sockets' messages the hubs handled, and
    /// closes (1012) the sockets it no longer holds, so none stays open with nothing behind it.
    func sendReports(_ state: inout State) {
        guard case .leader(_, let generation) = state.role, !state.leader.reports.isEmpty || !state.leader.orphans.isEmpty else { return }
        var closes = state.leader.takeOrphans()
        for (node, handled) in state.leader.takeReports() {
            let batch = TunnelBatch(generation: generation, commands: closes.removeValue(forKey: node) ?? [], handled: handled)
            enqueue(&state, to: node, kind: TunnelBatch.commandsKind, batch)
        }
        for (node, commands) in closes {
            enqueue(&state, to: node, kind: TunnelBatch.commandsKind, TunnelBatch(generation: generation, commands: commands))
        }
    }

    /// Queues `batch` for `node`, in order after what was queued before (one outbox per node).
    /// A leader's batches say it reports handled messages (``TunnelBatch/reports``).
    func enqueue(
        _ state: inout State, to node: String, kind: String, _ batch: TunnelBatch, body: String? = nil, onSent: (@Sendable () -> Void)? = nil
    ) {
        guard !state.stopped else {
            onSent?()
            return
        }
        var batch = batch
        if kind == TunnelBatch.commandsKind, case .leader = state.role { batch.reports = true }
        if let outbox = state.outboxes[node] {
            outbox.enqueue(kind: kind, batch, body: body, onSent: onSent)
            return
        }
        let outbox = TunnelOutbox(
            destination: node,
            send: { [bus, logger, from = self.node] kind, body in
                do {
                    try await bus.send(NodeMessage(id: UUID().uuidString, from: from, kind: kind, body: body), to: node)
                    return true
                } catch {
                    logger.warning("a tunnel message was not sent", metadata: ["to": "\(node)", "error": "\(error)"])
                    return false
                }
            },
            failed: { [weak self] kind in
                self?.dropped.increment()
                // A lost tunnel batch leaves a gap in its sockets' streams; a lost batch of
                // calls is answered by its requests' timeout, a lost notice by its singleton's
                // periodic run.
                if kind != CallForwardBatch.messageKind && kind != Self.helloKind && LeaderNotice(rawValue: kind) == nil {
                    self?.sendFailed(to: node)
                }
            })
        state.outboxes[node] = outbox
        outbox.enqueue(kind: kind, batch, body: body, onSent: onSent)
    }

    /// A batch for `node` was lost: a front cuts its sockets off the leader; a leader drops the
    /// node's relayed connections (their clients resume).
    func sendFailed(to node: String) {
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

    func tick() {
        let now = clock.now()
        let (late, check) = state.withLock { state -> ([OutboundCommand], Bool) in
            switch state.role {
            case .front where state.front.leader != nil && now.since(state.confirmed) >= unrenewedLimit:
                // No turn renewed this node for nearly a lease (the database stopped answering:
                // cut off, or frozen): its node lease is about to lapse, and the leader then
                // drops the sockets it relays. They are closed (1012) first, for their clients
                // to resume, and new ones refused, until a turn renews the node again.
                logger.warning("this node was not renewed for a lease; closing its relayed sockets until it is", metadata: ["node": "\(node)"])
                return (cutOffUnrenewed(&state), false)
            case .front:
                // Once a second, a probe through the bus to the leader and back (the relay's
                // round trip, switchboard_cluster_relay_round_trip_seconds).
                if let leader = state.front.leader, state.listenerUp, now.since(state.lastPing) >= .seconds(1) {
                    state.lastPing = now
                    enqueue(&state, to: leader.node, kind: TunnelBatch.eventsKind, TunnelBatch(generation: leader.generation, ping: now.nanoseconds))
                }
                return (state.front.tick(now: now), false)
            case .leader:
                guard !state.leader.nodes.isEmpty, now.since(state.lastNodeCheck) >= checkEvery else { return ([], false) }
                state.lastNodeCheck = now
                return ([], true)
            case .switching:
                return ([], false)
            }
        }
        if !late.isEmpty { _ = local.submit(late) }
        if check { dropDeadNodes() }
        refreshPeers(now: now)
    }

    /// The leader drops the relayed connections of nodes whose lease lapsed (killed, cut off):
    /// their sessions go into their resume window, as a lost socket's do.
    fileprivate func dropDeadNodes() {
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
