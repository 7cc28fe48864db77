import Foundation
import Logging
import SwitchboardAdmin
import SwitchboardCore
import SwitchboardPostgres
import SwitchboardTransport

/// Several daemons on one PostgreSQL database (ADR 0012): the standby wait, a deposed leader's
/// stop, the secrets every node shares and `GET /v1/nodes`.
extension SwitchboardDaemon {
    /// Runs `body` on a thread of its own, so a start that stands by for long holds no thread of
    /// the cooperative pool.
    static func onThread<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
        try await withCheckedThrowingContinuation { continuation in
            Thread.detachNewThread { continuation.resume(with: Result { try body() }) }
        }
    }

    /// A secret of the state directory (`name`, created with `generate` at first start); with
    /// PostgreSQL the one every node of the database shares, so that all derive the same SFU
    /// rooms and take the same admin token. The first node to store it proposes its own file's
    /// secret (an upgraded single daemon keeps its rooms) or a new one; `keepCopy` writes the
    /// shared one into a state directory that has none, where operators look for it.
    func stateSecret(
        _ store: any DaemonStore, name: String, what: String, keepCopy: Bool, generate: () -> String
    ) throws -> (token: String, path: String, created: Bool) {
        let directory = configuration.store.directory
        guard let postgres = store as? PostgresStore else {
            return try PrivateStateFile.loadOrCreate(directory: directory, name: name, what: what, generate: generate)
        }
        let path = (directory as NSString).appendingPathComponent(name)
        let local = FileManager.default.fileExists(atPath: path)
            ? try PrivateStateFile.loadOrCreate(directory: directory, name: name, what: what, generate: generate).token : nil
        let proposed = local ?? generate()
        let shared = try postgres.sharedSecret(name, proposed: proposed)
        if let local, local != shared {
            logger.warning("\(path) differs from the \(what) the daemons of this database share; the shared one is used", metadata: ["file": "\(path)"])
        }
        if local == nil && keepCopy {
            _ = try PrivateStateFile.loadOrCreate(directory: directory, name: name, what: what, generate: { shared })
        }
        return (shared, local == nil && keepCopy ? path : "the PostgreSQL database (cluster_secret \(name))", shared == proposed && local == nil)
    }

    /// `GET /v1/nodes`: this daemon alone with SQLite; every node registered in the database,
    /// with its role on the database's clock, with PostgreSQL.
    func clusterView(_ store: any DaemonStore) throws(SwitchboardError) -> ClusterView {
        guard let postgres = store as? PostgresStore else {
            let now = clocks.wall()
            let description = nodeDescription
            return ClusterView(
                store: "sqlite", leader: nodeID, generation: nil,
                nodes: [
                    ClusterNode(
                        id: nodeID, role: .leader, current: true, description: description, startedAt: startedAt, lastSeen: now, leaseUntil: now,
                        sockets: transport.webSocketCount, calls: calls?.withGateway { $0.engine.liveCallCount } ?? 0)
                ])
        }
        let cluster: (nodes: [NodeRecord], leader: Leadership?, now: Date)
        do {
            cluster = try postgres.cluster()
        } catch let error as SwitchboardError {
            throw error
        } catch {
            throw SwitchboardError(.unavailable, "PostgreSQL: \(error)")
        }
        return ClusterView(
            store: "postgres",
            rows: cluster.nodes, leader: cluster.leader, current: nodeID, now: cluster.now)
    }

    /// Where this daemon runs, for `/v1/nodes` and the logs.
    var nodeDescription: String {
        "\(ProcessInfo.processInfo.hostName) pid \(getpid()), state directory \(configuration.store.directory)"
    }
}
