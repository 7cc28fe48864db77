import Foundation
import SwitchboardCore

/// One daemon of the service as `GET /v1/nodes` shows it.
public struct ClusterNode: Sendable, Equatable, Encodable {
    /// What a node is doing: it `leads` (runs every call and writes), it stands `by` to take
    /// over, or it is `dead` (its node lease lapsed: it stopped renewing).
    public enum Role: String, Sendable, Encodable { case leader, standby, dead }

    public var id: String
    public var role: Role
    /// Whether this is the node that answered.
    public var current: Bool
    public var description: String
    public var startedAt: Date
    public var lastSeen: Date
    public var leaseUntil: Date
    /// The client WebSockets open on the node (its own listener's, relayed ones included), as of
    /// its last renewal.
    public var sockets: Int
    /// The live calls the node runs (with PostgreSQL: those it holds the claim of).
    public var calls: Int

    public init(
        id: String, role: Role, current: Bool, description: String, startedAt: Date, lastSeen: Date, leaseUntil: Date, sockets: Int = 0, calls: Int = 0
    ) {
        self.sockets = sockets
        self.calls = calls
        self.id = id
        self.role = role
        self.current = current
        self.description = description
        self.startedAt = startedAt
        self.lastSeen = lastSeen
        self.leaseUntil = leaseUntil
    }
}

/// The daemons sharing this daemon's store: one with SQLite, every node registered in the
/// database with PostgreSQL.
public struct ClusterView: Sendable, Equatable, Encodable {
    /// `sqlite` or `postgres`.
    public var store: String
    /// The leading node's id and generation (one more at each takeover); `nil` when no node
    /// holds a running lease.
    public var leader: String?
    public var generation: Int64?
    public var nodes: [ClusterNode]
    /// The client WebSockets open on the live nodes, together.
    public var sockets: Int { nodes.filter { $0.role != .dead }.reduce(0) { $0 + $1.sockets } }
    /// The live calls the live nodes run, together.
    public var calls: Int { nodes.filter { $0.role != .dead }.reduce(0) { $0 + $1.calls } }

    public init(store: String, leader: String?, generation: Int64?, nodes: [ClusterNode]) {
        self.store = store
        self.leader = leader
        self.generation = generation
        self.nodes = nodes
    }

    /// The view at `now` (the database's clock, which the leases run on): a node whose lease
    /// lapsed is dead; the leader is the node holding the leader lease while it runs.
    public init(
        store: String, rows: [NodeRecord], leader: Leadership?, current: String, now: Date
    ) {
        let leading = leader.flatMap { $0.leaseUntil > now ? $0.node : nil }
        self.init(
            store: store, leader: leading, generation: leader?.generation,
            nodes: rows.map { row in
                let role: ClusterNode.Role = row.leaseUntil <= now ? .dead : row.id == leading ? .leader : .standby
                return ClusterNode(
                    id: row.id, role: role, current: row.id == current, description: row.description, startedAt: row.startedAt, lastSeen: row.lastSeen,
                    leaseUntil: row.leaseUntil, sockets: row.sockets, calls: row.calls)
            }.sorted { ($0.role.order, $0.id) < ($1.role.order, $1.id) })
    }
}

extension ClusterView {
    private enum CodingKeys: String, CodingKey { case store, leader, generation, nodes, sockets, calls }

    /// `leader` and `generation` are written as `null` when absent, as the document says.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(store, forKey: .store)
        try container.encode(leader, forKey: .leader)
        try container.encode(generation, forKey: .generation)
        try container.encode(nodes, forKey: .nodes)
        try container.encode(sockets, forKey: .sockets)
        try container.encode(calls, forKey: .calls)
    }
}

extension ClusterNode.Role {
    fileprivate var order: Int {
        switch self {
        case .leader: 0
        case .standby: 1
        case .dead: 2
        }
    }
}

extension AdminRoutes {
    static func nodes(_ context: any AdminContext) throws(SwitchboardError) -> HTTPResponse {
        AdminJSON.response(200, try context.cluster())
    }
}
