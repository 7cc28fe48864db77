import Dispatch
import Foundation
import SwitchboardCore

/// How a hub that shares calls with other nodes reaches them (``CallHub/shareCalls(peers:send:)``).
struct CallSharing: Sendable {
    /// The other live nodes, at the time of asking.
    var peers: @Sendable () -> [String]
    /// Takes what goes to each node after a commit, to send in order per node.
    var send: @Sendable ([String: CallForwardBatch]) -> Void
}

/// Calls run by several nodes (ADR 0012, step 3): a hub that owns calls per node (``ownCalls(through:wait:)``)
/// and shares them forwards its clients' requests for a call another live node holds to that
/// node instead of refusing them, runs the requests other nodes forward for the calls it holds,
/// and sends the events of its calls to the other nodes, which deliver them to the client
/// connections they hold.
extension CallHub {
    /// Shares calls with the other nodes: `peers` names the other live nodes; `send` gets, after
    /// each commit (or a failed one: then only the answers, `unavailable`), what goes to each
    /// node. Set before ``start(transport:)``, after ``ownCalls(through:wait:)``.
    public func shareCalls(peers: @escaping @Sendable () -> [String], send: @escaping @Sendable ([String: CallForwardBatch]) -> Void) {
        queue.sync {
            sharing = CallSharing(peers: peers, send: send)
            gateway.sharesCalls = true
        }
    }

    /// What `node` sent about the calls the two share. Answers and events go first, in a batch
    /// of their own (nothing to commit, so no failed commit holds them back); then the node's
    /// lost connections and its requests, in one batch with one commit.
    public func forwardArrived(_ batch: CallForwardBatch, from node: String) {
        queue.async { self.receiveForwarded(batch, from: node) }
    }

    func receiveForwarded(_ batch: CallForwardBatch, from node: String) {
        dispatchPrecondition(condition: .onQueue(queue))
        metrics.forwardedIn.increment(by: batch.requests.count)
        runForwardedAdmin(batch.adminRequests, from: node)
        let answers = takeAdminAnswers(batch.answers)
        if !answers.isEmpty || !batch.notices.isEmpty || !batch.movedConnections.isEmpty {
            self.batch { gateway, output, _ in
                gateway.connectionsMoved(batch.movedConnections, into: &output)
                for answer in answers { gateway.answerArrived(answer, into: &output) }
                gateway.noticesArrived(batch.notices, into: &output)
            }
        }
        guard !batch.requests.isEmpty || !batch.lostConnections.isEmpty else { return }
        // A request sent here for a call another node holds is refused, not sent on: the
        // client's node finds the owner again when its client retries.
        preload(batch.requests.map(\.cid), forwarding: false)
        learnPresence(batch.requests.compactMap { request in
            guard case .success(let frame) = gateway.parse(request.frame.bytes) else { return nil }
            return frame.request
        })
        let placer = placement.placer()
        let newID = self.newID
        self.batch { gateway, output, now in
            if !batch.lostConnections.isEmpty { gateway.connectionsLostElsewhere(batch.lostConnections, now: now, into: &output) }
            for request in batch.requests { gateway.runForwarded(request, from: node, placer: placer, newID: newID, now: now, into: &output) }
        }
    }

    /// Reads from the store what the requests' rings need to know of their users: busy in
    /// another node's call, connected to another node, their devices (a hub sharing calls only;
    /// one that runs every call knows it all). When the read fails, the rings go by what this
    /// node holds.
    func learnPresence(_ requests: [ClientRequest]) {
        dispatchPrecondition(condition: .onQueue(queue))
        guard sharing != nil else { return }
        let users = gateway.usersRung(by: requests)
        guard !users.isEmpty else { return }
        do {
            gateway.know(try store.presence(of: users))
        } catch {
            logger.warning("reading the rung users' presence failed; ringing by what this node holds", metadata: ["error": "\(error)"])
        }
    }

    /// Reads from the store the calls other nodes run that ring `user`, whose device is
    /// authenticating here: it gets their `call.ring` with those of this node's calls.
    func learnRings(of user: String) {
        dispatchPrecondition(condition: .onQueue(queue))
        guard sharing != nil, let id = UserID(user) else { return }
        do {
            let rings = try store.presence(of: [id])[id]?.rings ?? []
            gateway.know(rings: try rings.filter { !gateway.holds($0) }.sorted().compactMap { try store.callDetail($0, eventLimit: 0) })
        } catch {
            logger.warning("reading the calls ringing a connecting user failed; only this node's rings are sent", metadata: ["error": "\(error)"])
        }
    }

    /// After a commit: what goes to the other nodes.
    func sendForwards(_ output: CallGatewayOutput) {
        guard let sharing else { return }
        metrics.forwardedOut.increment(by: output.forwards.count)
        let batches = output.forwardBatches(to: sharing.peers())
        if !batches.isEmpty { sharing.send(batches) }
    }

    /// After a failed commit: the requests other nodes forwarded in the batch are answered
    /// `unavailable`, as this node's own; nothing else of the batch happened.
    func refuseForwards(_ output: CallGatewayOutput, _ failure: SwitchboardError) {
        guard let sharing, !output.answers.isEmpty else { return }
        var refused = CallGatewayOutput()
        refused.answers = output.answers.map { ($0.origin, ForwardedCallAnswer(ticket: $0.answer.ticket, result: .failure(failure))) }
        sharing.send(refused.forwardBatches(to: []))
    }
}
