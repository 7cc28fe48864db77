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

    /// The bus kind of a webhook notice: messages were committed, the leader's dispatcher reads them.
    static let webhooksKind = "webhooks"

    /// Tells the leader the front follows that this node committed webhook messages (its call
    /// hub's commits), so its dispatcher reads and sends them now. A notice already queued
    /// covers the next commits; with no leader known, or a notice lost, the dispatcher's
    /// periodic read finds them.
    func sendWebhooksCommitted() {
        state.withLock { state in
            guard case .front = state.role, let leader = state.front.leader, !state.webhookNoticeQueued else { return }
            state.webhookNoticeQueued = true
            enqueue(&state, to: leader.node, kind: Self.webhooksKind, TunnelBatch(generation: leader.generation), body: "{}") { [weak self] in
                self?.state.withLock { $0.webhookNoticeQueued = false }
            }
        }
    }

    /// Who hears, while this node leads, that another node committed webhook messages (the
    /// webhook dispatcher's ``WebhookDispatcher/storeChanged()``); any time, from any thread.
    func onWebhooksCommitted(_ handler: (@Sendable () -> Void)?) {
        state.withLock { $0.webhooksCommitted = handler }
    }

    /// A webhook notice from another node: to the dispatcher, when this node leads.
    func deliverWebhookNotice(_ message: NodeMessage) {
        let handler = state.withLock { state -> (@Sendable () -> Void)? in
            guard case .leader = state.role else { return nil }
            return state.webhooksCommitted
        }
        guard let handler else {
            logger.debug("dropped a webhook notice: this node does not lead", metadata: ["from": "\(message.from)"])
            return
        }
        handler()
    }
}
