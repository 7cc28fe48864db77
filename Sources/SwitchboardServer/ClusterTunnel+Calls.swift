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
}
