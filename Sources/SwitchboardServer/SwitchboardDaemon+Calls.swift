import Foundation
import Metrics
import SwitchboardApp
import SwitchboardAuth
import SwitchboardCore
import SwitchboardPostgres
import SwitchboardSFU

extension SwitchboardDaemon {
    /// Builds the call hub on a queue of its own (a commit never holds up PeerJS relaying),
    /// rebuilds call state from the store and attaches it to `connect.path`.
    func startCalls(
        store: any DaemonStore, directory: SFUDirectory, tokens: JWTTokenService?, webhooks: (dispatcher: WebhookDispatcher, client: WebhookDeliveryClient)?,
        factory: any MetricsFactory
    ) throws -> CallHub? {
        guard let path = configuration.connectPath else { return nil }
        if let spread = spreadCalls {
            // Started while relaying: it keeps its calls and sockets; its messages now go to
            // this node's own dispatcher.
            if let dispatcher = webhooks?.dispatcher { spread.hub.onWebhooksCommitted(dispatcher.committed) }
            hub.attach(calls: spread.hub, path: path)
            return spread.hub
        }
        let calls = makeCallHub(store: store, placement: directory, tokens: tokens, factory: factory)
        if let dispatcher = webhooks?.dispatcher { calls.onWebhooksCommitted(dispatcher.committed) }
        if let postgres = store as? PostgresStore {
            // Calls owned per node (ADR 0012): claimed before they are loaded, every write checked.
            calls.ownCalls(through: postgres.ownCalls(as: nodeID), wait: configuration.postgresLease)
        }
        try calls.start(transport: clusterTunnel ?? transport)
        hub.attach(calls: calls, path: path)
        return calls
    }

    /// A call hub on a queue of its own (a commit never holds up PeerJS relaying), with the
    /// daemon's clocks: the leader's, a one-daemon store's, and a spread daemon's alike.
    func makeCallHub(store: any CallStore, placement: SFUDirectory, tokens: JWTTokenService?, factory: any MetricsFactory) -> CallHub {
        CallHub(
            queue: DispatchQueue(label: "switchboard.calls"), configuration: configuration.calls, store: store, placement: placement,
            tokenVerifier: tokens, wallClock: { [wall = clocks.wall] in CallHub.roundedToMilliseconds(wall()) }, newID: clocks.newID,
            metricsFactory: factory, logger: logger)
    }

    /// The location table and placement on `store`, with the configured policy and regions and
    /// the room key in the state directory.
    func makeDirectory(store: any DaemonStore, factory: any MetricsFactory) throws -> SFUDirectory {
        try SFUDirectory(
            store: store, policy: configuration.placement.policy, resolver: configuration.placement.resolver,
            clock: clocks.monotonic, wallClock: clocks.wall, metricsFactory: factory, roomKeys: try roomKeys(store), logger: logger)
    }

    /// Several daemons share the store (PostgreSQL): other nodes' call hubs commit what the
    /// leader's singletons act on too. They send a notice on the bus (``LeaderNotice``), and the
    /// singletons' periodic runs find what a lost notice did not say: the dispatcher reads the
    /// pending deliveries every lease, the reconciler runs every poll interval.
    func hearOtherNodes(store: any DaemonStore, dispatcher: WebhookDispatcher?, rooms: JanusRoomReconciler?) {
        guard store is PostgresStore else { return }
        clusterTunnel?.onLeaderNotice { [weak dispatcher, weak rooms] notice in
            switch notice {
            case .webhooks: dispatcher?.storeChanged()
            case .rooms: rooms?.kick()
            }
        }
        dispatcher?.refreshFromStore(every: configuration.postgresLease)
    }

    /// What the Janus rooms should hold. On PostgreSQL, the live rooms the store holds: every
    /// node's calls, not only those this one runs (ADR 0012), read off the reconciler's task;
    /// `nil` when the read fails, and the run is skipped (no room goes for want of a read).
    /// Otherwise the call hub's calls, which are all the calls.
    func desiredRooms(store: any DaemonStore, calls: CallHub?) -> @Sendable () async -> [SFUID: [DesiredRoom]]? {
        guard store is PostgresStore else { return { await calls?.desiredRooms() ?? [:] } }
        let types = configuration.calls.types
        // A call of a type no longer configured keeps its room, sized as the largest type.
        let largest = types.values.map(\.maxParticipants).max() ?? CallTypeSettings.meeting.maxParticipants
        return { [logger] in
            await withCheckedContinuation { continuation in
                DispatchQueue.global().async {
                    do {
                        let rooms = try store.liveRooms()
                        continuation.resume(returning: LiveRoom.desired(rooms) { types[$0]?.maxParticipants ?? largest })
                    } catch {
                        logger.warning("could not read the calls' rooms from the store; the room check waits for the next run", metadata: ["error": "\(error)"])
                        continuation.resume(returning: nil)
                    }
                }
            }
        }
    }
}
