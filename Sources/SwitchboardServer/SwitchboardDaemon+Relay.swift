import Foundation
import Logging
import Metrics
import SwitchboardAdmin
import SwitchboardCore
import SwitchboardPostgres

/// A standby that relays (`store.postgres_standby` relay, ADR 0012): while another daemon leads,
/// this one binds its listeners and hands its clients' sockets and requests to the leader over
/// the database's bus (``ClusterTunnel``); once it leads, the same tunnel passes its own
/// transport's events to its hubs and carries the other nodes' relayed ones in.
extension SwitchboardDaemon {
    /// Starts relaying, when configured: the bus, the tunnel as the transport's sink, and the
    /// node's own `/healthz`, `/readyz` and `/metrics`. `nil` with `store.postgres_standby` idle.
    func startRelaying(_ store: PostgresStore, factory: any MetricsFactory) throws -> ClusterTunnel? {
        guard configuration.postgresRelays, let postgres = configuration.postgres else { return nil }
        let bus = try PostgresBus(configuration: postgres, node: nodeID, logger: logger)
        let tunnel = ClusterTunnel(
            bus: bus, local: transport, lease: configuration.postgresLease, clock: clocks.monotonic, factory: factory, logger: logger)
        tunnel.liveNodes = {
            let cluster = try store.cluster()
            return Set(cluster.nodes.filter { $0.leaseUntil > cluster.now }.map(\.id))
        }
        let router = AdminRoutes.relayRouter(
            configuration: try adminConfiguration(store),
            readiness: { [weak self, weak tunnel] in
                let reaching = tunnel.map { $0.listening && ($0.following != nil || $0.leads) } ?? false
                return Readiness(
                    storeWritable: reaching, listenersUp: self?.transport.isRunning ?? false, threadsTurning: self?.stalledThreads().isEmpty ?? false,
                    draining: (self?.standbyCancelled ?? true) || (tunnel?.draining ?? true))
            },
            metrics: { [weak self] in self?.registry.emitToString() ?? "" },
            drain: { [weak tunnel] in tunnel?.beginDraining() }, auditLog: store, now: clocks.wall)
        tunnel.frontAdmin = { router.respond(to: $0) }
        clusterTunnel = tunnel
        tunnel.start()
        do {
            spreadCalls = try startSpreadCalls(store, tunnel: tunnel, factory: factory)
            try transport.start(sink: tunnel)
        } catch {
            stopRelaying()
            throw error
        }
        logger.notice(
            "relaying clients to the leading node while standing by",
            metadata: [
                "client_port": "\(transport.boundPort(of: .client).map(String.init) ?? "none")",
                "admin_port": "\(transport.boundPort(of: .admin).map(String.init) ?? "none")", "node": "\(nodeID)",
            ])
        return tunnel
    }

    /// Stops a standby's relaying (told to stop while standing by, or a failed start): its
    /// sockets are closed (1001) and the bus let go.
    func stopRelaying() {
        guard clusterTunnel != nil else { return }
        if transport.isRunning {
            _ = transport.drain(code: .goingAway, timeout: min(configuration.drainTimeout, .seconds(5)))
            _ = transport.stop(timeout: .seconds(5))
        }
        if let spread = spreadCalls {
            spread.stop()
            hub.stop()
            spreadCalls = nil
        }
        stopTunnel()
    }

    /// Lets the tunnel's bus go (at stop).
    func stopTunnel() {
        guard let tunnel = clusterTunnel else { return }
        clusterTunnel = nil
        Blocking.wait { await tunnel.stop() }
    }
}
