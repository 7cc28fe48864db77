import Foundation
import PostgresNIO
import SwitchboardCore

/// The daemons using one database (ADR 0012). Every daemon registers a `node` row and renews it
/// while it runs (a row whose lease lapsed is a dead node). One of them leads: it holds the
/// `leader` row's lease, runs every call and writes; the others stand by and take the lease
/// over when it lapses, each takeover with the next generation. Leases run on the server's
/// clock, so nodes' clocks need not agree.
extension PostgresStore {
    /// What a leader's writes carry: its node and generation (``PostgresStore/fence``).
    public struct Fence: Sendable, Equatable {
        public var node: String
        public var generation: Int64
        public init(node: String, generation: Int64) {
            self.node = node
            self.generation = generation
        }
    }

    /// The columns ``node(_:)`` reads, in its order.
    static let nodeColumns = """
        id, description, started_at, last_seen, lease_until, sockets,
        (SELECT count(*) FROM call_owner o JOIN call c ON c.cid = o.cid WHERE o.node = node.id AND c.ended_at IS NULL)
        """

    /// Registers node `id` (or renews its row) for `lease`, with its open client `sockets` and
    /// how it runs calls (`calls`, `store.postgres_calls`); rows of nodes dead for a day go.
    public func registerNode(id: String, description: String, lease: Duration, sockets: Int = 0, calls: String? = nil) throws {
        var binds = PostgresBindings()
        binds.append(id)
        binds.append(description)
        binds.append(Self.milliseconds(lease))
        binds.append(Int32(clamping: sockets))
        binds.append(calls)
        try nodeSession.transaction { connection in
            try connection.execute("DELETE FROM node WHERE lease_until < now() - interval '1 day'")
            try connection.execute(
                """
                INSERT INTO node (id, description, started_at, last_seen, lease_until, sockets, calls)
                VALUES ($1, $2, now(), now(), now() + $3 * interval '1 millisecond', $4, $5)
                ON CONFLICT (id) DO UPDATE SET description = EXCLUDED.description, last_seen = EXCLUDED.last_seen,
                  lease_until = EXCLUDED.lease_until, sockets = EXCLUDED.sockets, calls = EXCLUDED.calls
                """, binds)
        }
    }

    /// The live nodes other than `id` that run calls otherwise than `calls`, by id, with the
    /// mode each registered (nodes that registered none, from before, are left out).
    public func nodesRunningCalls(otherThan calls: String, except id: String) throws -> [String: String] {
        var binds = PostgresBindings()
        binds.append(calls)
        binds.append(id)
        let rows = try nodeSession.withConnection { connection in
            try connection.query(
                "SELECT id, calls FROM node WHERE lease_until > now() AND calls IS NOT NULL AND calls <> $1 AND id <> $2 ORDER BY id", binds)
        }
        return Dictionary(uniqueKeysWithValues: try rows.map { try $0.decode((String, String).self) })
    }

    /// Renews node `id`'s row (registering it again if an operator removed it).
    public func renewNode(id: String, description: String, lease: Duration, sockets: Int = 0, calls: String? = nil) throws {
        var binds = PostgresBindings()
        binds.append(id)
        binds.append(Self.milliseconds(lease))
        binds.append(Int32(clamping: sockets))
        let renewed = try nodeSession.withConnection { connection in
            try connection.query(
                "UPDATE node SET last_seen = now(), lease_until = now() + $2 * interval '1 millisecond', sockets = $3 WHERE id = $1 RETURNING id",
                binds)
        }
        if renewed.isEmpty { try registerNode(id: id, description: description, lease: lease, sockets: sockets, calls: calls) }
    }

    /// Removes node `id`'s row at a clean stop.
    public func removeNode(id: String) throws {
        var binds = PostgresBindings()
        binds.append(id)
        try nodeSession.withConnection { try $0.execute("DELETE FROM node WHERE id = $1", binds) }
    }

    /// Every node row, live or lapsed, by id.
    public func nodes() throws -> [NodeRecord] {
        try nodeSession.withConnection { connection in try connection.query("SELECT \(Self.nodeColumns) FROM node ORDER BY id").compactMap(Self.node) }
    }

    /// Takes the lead for `node` when nobody leads or the leader's lease lapsed: the new
    /// leadership, with the next generation; `nil` while another node's lease runs (or `node`
    /// already leads: renew it instead). Waits for a write of the old leader under way (its
    /// fence holds the row), so everything it committed is there to read.
    public func claimLeadership(node: String, lease: Duration) throws -> Leadership? {
        var binds = PostgresBindings()
        binds.append(node)
        binds.append(Self.milliseconds(lease))
        return try nodeSession.withConnection { connection in
            try connection.query(
                """
                INSERT INTO leader (id, node, generation, lease_until) VALUES (1, $1, 1, now() + $2 * interval '1 millisecond')
                ON CONFLICT (id) DO UPDATE SET node = EXCLUDED.node, generation = leader.generation + 1, lease_until = EXCLUDED.lease_until
                WHERE leader.lease_until <= now()
                RETURNING node, generation, lease_until
                """, binds
            ).compactMap(Self.leadership).first
        }
    }

    /// Renews `fence`'s lease; `false` when another node took the lead since (this one must
    /// stop acting as leader). A lapsed lease nobody took is renewed.
    public func renewLeadership(_ fence: Fence, lease: Duration) throws -> Bool {
        var binds = PostgresBindings()
        binds.append(fence.node)
        binds.append(fence.generation)
        binds.append(Self.milliseconds(lease))
        return try nodeSession.withConnection { connection in
            !(try connection.query(
                "UPDATE leader SET lease_until = now() + $3 * interval '1 millisecond' WHERE id = 1 AND node = $1 AND generation = $2 RETURNING id",
                binds)).isEmpty
        }
    }

    /// Gives the lead up at a clean stop: a standby takes it at its next try, not a lease later.
    public func releaseLeadership(_ fence: Fence) throws {
        var binds = PostgresBindings()
        binds.append(fence.node)
        binds.append(fence.generation)
        try nodeSession.withConnection { connection in
            try connection.execute("UPDATE leader SET lease_until = now() WHERE id = 1 AND node = $1 AND generation = $2", binds)
        }
    }

    /// Every node, who leads, and the server's clock they run on, read at one instant.
    public func cluster() throws -> (nodes: [NodeRecord], leader: Leadership?, now: Date) {
        try nodeSession.transaction { connection in
            let nodes = try connection.query("SELECT \(Self.nodeColumns) FROM node ORDER BY id").compactMap(Self.node)
            let leader = try connection.query("SELECT node, generation, lease_until FROM leader WHERE id = 1").compactMap(Self.leadership).first
            guard let now = try connection.query("SELECT now()").first?.decode(Date.self) else {
                throw SwitchboardError(.internalError, "the PostgreSQL server did not tell its time")
            }
            return (nodes, leader, now)
        }
    }

    /// Who leads now (`nil`: nobody ever did).
    public func leadership() throws -> Leadership? {
        try session.withConnection { connection in
            try connection.query("SELECT node, generation, lease_until FROM leader WHERE id = 1").compactMap(Self.leadership).first
        }
    }

    /// The secret `name` every node shares: the one stored, or `proposed` stored now when there
    /// is none (the first node to ask sets it; a fenced write).
    public func sharedSecret(_ name: String, proposed: String) throws -> String {
        var binds = PostgresBindings()
        binds.append(name)
        binds.append(proposed)
        return try write { connection in
            try connection.execute("INSERT INTO cluster_secret (name, value) VALUES ($1, $2) ON CONFLICT (name) DO NOTHING", binds)
            var named = PostgresBindings()
            named.append(name)
            guard let value = try connection.query("SELECT value FROM cluster_secret WHERE name = $1", named).first?.decode(String.self) else {
                throw SwitchboardError(.internalError, "the shared secret \(name) was stored but cannot be read back")
            }
            return value
        }
    }

    /// The fence check of every write: whether `fence` still leads, holding the row until the
    /// transaction ends.
    static func stillLeads(_ fence: Fence, _ connection: PostgresSession.Connection) throws -> Bool {
        var binds = PostgresBindings()
        binds.append(fence.node)
        binds.append(fence.generation)
        return !(try connection.query("SELECT 1 FROM leader WHERE id = 1 AND node = $1 AND generation = $2 FOR SHARE", binds)).isEmpty
    }

    private static func milliseconds(_ duration: Duration) -> Int64 {
        duration.components.seconds * 1000 + duration.components.attoseconds / 1_000_000_000_000_000
    }

    private static func node(_ row: PostgresRow) -> NodeRecord? {
        guard let (id, description, startedAt, lastSeen, leaseUntil, sockets, calls) = try? row.decode((String, String, Date, Date, Date, Int32, Int64).self)
        else {
            return nil
        }
        return NodeRecord(
            id: id, description: description, startedAt: startedAt, lastSeen: lastSeen, leaseUntil: leaseUntil, sockets: Int(sockets), calls: Int(calls))
    }

    private static func leadership(_ row: PostgresRow) -> Leadership? {
        guard let (node, generation, leaseUntil) = try? row.decode((String, Int64, Date).self) else { return nil }
        return Leadership(node: node, generation: generation, leaseUntil: leaseUntil)
    }
}

extension Leadership {
    /// What this leadership's writes carry.
    public var fence: PostgresStore.Fence { PostgresStore.Fence(node: node, generation: generation) }
}
