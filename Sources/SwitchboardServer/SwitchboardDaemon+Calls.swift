import Foundation
import Metrics
import SwitchboardApp
import SwitchboardAuth
import SwitchboardCore
import SwitchboardPostgres

extension SwitchboardDaemon {
    /// Builds the call hub on a queue of its own (a commit never holds up PeerJS relaying),
    /// rebuilds call state from the store and attaches it to `connect.path`.
    func startCalls(
        store: any DaemonStore, directory: SFUDirectory, tokens: JWTTokenService?, webhooks: (dispatcher: WebhookDispatcher, client: WebhookDeliveryClient)?,
        factory: any MetricsFactory
    ) throws -> CallHub? {
        guard let path = configuration.connectPath else { return nil }
        let calls = CallHub(
            queue: DispatchQueue(label: "switchboard.calls"), configuration: configuration.calls, store: store, placement: directory,
            tokenVerifier: tokens, wallClock: { [wall = clocks.wall] in CallHub.roundedToMilliseconds(wall()) }, newID: clocks.newID,
            metricsFactory: factory, logger: logger)
        if let dispatcher = webhooks?.dispatcher { calls.onWebhooksCommitted(dispatcher.committed) }
        if let postgres = store as? PostgresStore {
            // Calls owned per node (ADR 0012): claimed before they are loaded, every write checked.
            calls.ownCalls(through: postgres.ownCalls(as: nodeID), wait: configuration.postgresLease)
        }
        try calls.start(transport: clusterTunnel ?? transport)
        hub.attach(calls: calls, path: path)
        return calls
    }

    /// Several daemons share the store (PostgreSQL): other nodes' call hubs commit webhook
    /// messages too. They send a notice on the bus, and a read every lease finds those whose
    /// notice was lost.
    func hearOtherNodesWebhooks(_ dispatcher: WebhookDispatcher, store: any DaemonStore) {
        guard store is PostgresStore else { return }
        clusterTunnel?.onWebhooksCommitted { [weak dispatcher] in dispatcher?.storeChanged() }
        dispatcher.refreshFromStore(every: configuration.postgresLease)
    }
}
