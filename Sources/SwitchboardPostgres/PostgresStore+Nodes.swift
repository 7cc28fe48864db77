import Foundation
import PostgresNIO
import SwitchboardCore

/// The daemons using one database (ADR 0012). Until calls are owned per node, a database has one
/// live node at a time: every daemon keeps its calls in memory and commits them as if it were
/// alone, so a second one would overwrite the first's changes. A node holds a lease renewed on
/// the server's clock (so nodes' clocks need not agree); a daemon refuses to start while another
/// node's lease runs.
extension PostgresStore {
    /// One node as the `node` table has it.
    public struct Node: Sendable, Equatable {
        public var id: String
        /// Where it runs, for an operator (host, process, listeners).
        public var description: String
        public var startedAt: Date
        public var lastSeen: Date
        public var leaseUntil: Date
    }

    /// Takes the database for node `id` for `lease`: refused (`conflict`, naming the holder) while
    /// another node's lease runs; a lapsed node's row is replaced.
    public func claimNode(id: String, description: String, lease: Duration) throws {
        let holders: [Node] = try session.transaction { connection in
            var lock = PostgresBindings()
            lock.append(Self.nodeLockKey)
            try connection.execute("SELECT pg_advisory_xact_lock($1)", lock)
            var me = PostgresBindings()
            me.append(id)
            let others = try connection.query("SELECT * FROM node WHERE id <> $1 AND lease_until > now() ORDER BY id", me).compactMap(Self.node)
            guard others.isEmpty else { return others }
            try connection.execute("DELETE FROM node WHERE lease_until <= now()")
            var binds = PostgresBindings()
            binds.append(id)
            binds.append(description)
            binds.append(Self.milliseconds(lease))
            try connection.execute(
                """
                INSERT INTO node (id, description, started_at, last_seen, lease_until)
                VALUES ($1, $2, now(), now(), now() + $3 * interval '1 millisecond')
                ON CONFLICT (id) DO UPDATE SET description = EXCLUDED.description, last_seen = EXCLUDED.last_seen,
                  lease_until = EXCLUDED.lease_until
                """, binds)
            return []
        }
        if let holder = holders.first {
            throw SwitchboardError(
                .conflict,
                "another daemon uses this database (node \(holder.id), \(holder.description), lease until \(holder.leaseUntil)); several daemons on one database are not supported yet")
        }
    }

    /// Renews node `id`'s lease; `false` when its row is gone or another node's lease runs (the
    /// database was taken while this node's lease had lapsed: it must stop writing).
    public func renewNode(id: String, lease: Duration) throws -> Bool {
        var binds = PostgresBindings()
        binds.append(id)
        binds.append(Self.milliseconds(lease))
        return try session.transaction { connection in
            let renewed = try connection.query(
                "UPDATE node SET last_seen = now(), lease_until = now() + $2 * interval '1 millisecond' WHERE id = $1 RETURNING id", binds)
            var me = PostgresBindings()
            me.append(id)
            let others = try connection.query("SELECT id FROM node WHERE id <> $1 AND lease_until > now()", me)
            return !renewed.isEmpty && others.isEmpty
        }
    }

    /// Gives the database up at a clean stop: the next daemon need not wait for the lease.
    public func releaseNode(id: String) throws {
        var binds = PostgresBindings()
        binds.append(id)
        try session.withConnection { try $0.execute("DELETE FROM node WHERE id = $1", binds) }
    }

    /// Every node row, live or lapsed, by id.
    public func nodes() throws -> [Node] {
        try session.withConnection { connection in try connection.query("SELECT * FROM node ORDER BY id").compactMap(Self.node) }
    }

    static let nodeLockKey: Int64 = 0x5357_4254_4E4F_4445  // "SWBTNODE"

    private static func milliseconds(_ duration: Duration) -> Int64 {
        duration.components.seconds * 1000 + duration.components.attoseconds / 1_000_000_000_000_000
    }

    private static func node(_ row: PostgresRow) -> Node? {
        guard let (id, description, startedAt, lastSeen, leaseUntil) = try? row.decode((String, String, Date, Date, Date).self) else { return nil }
        return Node(id: id, description: description, startedAt: startedAt, lastSeen: lastSeen, leaseUntil: leaseUntil)
    }
}
