import Foundation
import SwitchboardCore

/// Calls run by several nodes (ADR 0012, step 3): the tunnel's bus also carries what the call
/// hubs of the nodes send each other (``CallForwardBatch``: forwarded requests, their answers,
/// events, lost connections), in order per node with the tunnel's own batches.
extension ClusterTunnel {
    /// Sends each node its batch, after what was queued for it before (a hub's `send`).
    func sendCalls(_ batches: [String: CallForwardBatch]) {
        state.withLock { state in
            for (node, batch) in batches.sorted(by: { $0.key < $1.key }) where !batch.isEmpty {
                let body = String(decoding: batch.json(), as: UTF8.self)
                enqueue(&state, to: node, kind: CallForwardBatch.messageKind, TunnelBatch(generation: 0), body: body)
            }
        }
    }

    /// A batch of calls from another node: to the call hub (``callsArrived``).
    func deliverCalls(_ message: NodeMessage) {
        guard let batch = CallForwardBatch.read(Array(message.body.utf8)) else {
            logger.warning("dropped a calls message that does not read", metadata: ["from": "\(message.from)", "bytes": "\(message.body.utf8.count)"])
            return
        }
        guard let callsArrived else {
            logger.warning("dropped a calls message: this node runs no calls", metadata: ["from": "\(message.from)"])
            return
        }
        callsArrived(batch, message.from)
    }

    /// From now on keeps the other live nodes at hand (``peers``), read every third of a lease
    /// by the tunnel's timer: a call hub that shares calls asks for them at every batch with
    /// events, which must not cost a query.
    func keepPeers() {
        state.withLock { $0.keepsPeers = true }
        greetPeers()
    }

    /// Reads the live nodes now and greets them: they learn of this node at once, not at their
    /// next read (none of their calls' events may miss its clients). Done when peers are first
    /// kept and again once this node is registered (its first turn: ``follow`` or the lead), so
    /// that of two nodes starting together, the one that reads second finds the first and greets it.
    func greetPeers() {
        guard state.withLock({ $0.keepsPeers }) else { return }
        state.withLock { $0.peersReadAt = nil }
        refreshPeers(now: clock.now())
        state.withLock { state in
            for peer in state.peers { enqueue(&state, to: peer, kind: Self.helloKind, TunnelBatch(generation: 0), body: "{}") }
        }
    }

    /// The bus kind a node that starts keeping peers greets them with (an empty body).
    static let helloKind = "hello"

    /// A message from `node`: a live node, kept as a peer from now on if it is new.
    func heard(from node: String) {
        guard node != self.node else { return }
        state.withLock { state in
            guard state.keepsPeers, !state.peers.contains(node) else { return }
            state.peers = (state.peers + [node]).sorted()
        }
    }

    /// The other live nodes, as last read (at most a third of a lease ago, while the store answers).
    var peers: [String] { state.withLock { $0.peers } }

    func refreshPeers(now: MonotonicTime) {
        let due = state.withLock { state -> Bool in
            guard state.keepsPeers, state.peersReadAt.map({ now.since($0) >= checkEvery }) ?? true else { return false }
            state.peersReadAt = now
            return true
        }
        guard due, let liveNodes else { return }
        do {
            let others = try liveNodes().subtracting([node]).sorted()
            state.withLock { $0.peers = others }
        } catch {
            logger.warning("could not read the live nodes; the calls' events go to those last read", metadata: ["error": "\(error)"])
        }
    }

    /// Keeps this node's call protocol sockets (WebSocket upgrades on `path`) on this node, for
    /// its own call hub (`hub`, whose commands go to this node's transport): with calls run on
    /// every node, a client's connection lives where its socket is (ADR 0012). While this node
    /// relays, new sockets on `path` go to `hub` instead of the leader (a draining node closes
    /// them as it closes every new socket); once it leads, new ones reach `hub` through the
    /// signaling hub, and those it kept before still go straight to `hub`.
    func keepCallsLocal(path: String, hub: any TransportEventSink) {
        state.withLock { $0.localCalls = (path, hub) }
    }

    /// Passes the events of the call sockets this node keeps to its call hub; returns the role
    /// and the other events.
    func keepingLocal(_ events: [TransportEvent]) -> (Role, [TransportEvent]) {
        let (role, mine, rest, hub) = state.withLock { state -> (Role, [TransportEvent], [TransportEvent], (any TransportEventSink)?) in
            guard let calls = state.localCalls else { return (state.role, [], events, nil) }
            // A front that follows no leader (not renewed: cut off from the database) refuses
            // new call sockets as it refuses every other (1013).
            var relays = false
            if case .front = state.role, !state.draining, state.front.leader != nil { relays = true }
            var mine: [TransportEvent] = [], rest: [TransportEvent] = []
            for event in events {
                switch event {
                case .opened(let id, let upgrade) where relays && upgrade.path == calls.path:
                    state.localSockets.insert(id)
                    mine.append(event)
                case .message(let id, _, _) where state.localSockets.contains(id):
                    mine.append(event)
                case .closed(let id) where state.localSockets.remove(id) != nil:
                    mine.append(event)
                default:
                    rest.append(event)
                }
            }
            return (state.role, mine, rest, calls.hub)
        }
        if let hub, !mine.isEmpty { hub.transportDidReceive(mine) }
        return (role, rest)
    }

    /// Tells the leader the front follows that this node's commits changed what a singleton
    /// the leader runs must act on (``LeaderNotice``). A notice of a kind already queued covers
    /// the next commits; with no leader known, or a notice lost, the singleton's periodic run
    /// finds the change.
    func notifyLeader(_ notice: LeaderNotice) {
        state.withLock { state in
            guard case .front = state.role, let leader = state.front.leader, !state.noticesQueued.contains(notice) else { return }
            state.noticesQueued.insert(notice)
            enqueue(&state, to: leader.node, kind: notice.rawValue, TunnelBatch(generation: leader.generation), body: "{}") { [weak self] in
                self?.state.withLock { _ = $0.noticesQueued.remove(notice) }
            }
        }
    }

    /// Who hears, while this node leads, the notices other nodes send (the webhook dispatcher's
    /// ``WebhookDispatcher/storeChanged()``, the room reconciler's kick); any time, any thread.
    func onLeaderNotice(_ handler: (@Sendable (LeaderNotice) -> Void)?) {
        state.withLock { $0.leaderNotices = handler }
    }

    /// A notice from another node: to the singletons, when this node leads.
    func deliverLeaderNotice(_ notice: LeaderNotice, from node: String) {
        let handler = state.withLock { state -> (@Sendable (LeaderNotice) -> Void)? in
            guard case .leader = state.role else { return nil }
            return state.leaderNotices
        }
        guard let handler else {
            logger.debug("dropped a notice: this node does not lead", metadata: ["from": "\(node)", "kind": "\(notice.rawValue)"])
            return
        }
        handler(notice)
    }
}

/// What another node's commits changed for a singleton the leader runs (ADR 0012); each is a
/// bus kind of its own, with an empty body.
enum LeaderNotice: String, Sendable, Hashable, CaseIterable {
    /// Webhook messages committed: the dispatcher reads the pending deliveries.
    case webhooks
    /// Placements or sessions of calls with rooms committed: the Janus room reconciler runs.
    case rooms
}
