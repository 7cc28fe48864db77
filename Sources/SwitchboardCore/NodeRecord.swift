import Foundation

/// One daemon registered in a shared store (ADR 0012): a row it renews while it runs; a node
/// whose lease lapsed is dead.
public struct NodeRecord: Sendable, Equatable {
    public var id: String
    /// Where it runs, for an operator (host, process, state directory).
    public var description: String
    public var startedAt: Date
    public var lastSeen: Date
    public var leaseUntil: Date
    /// The client WebSockets open on the node, as of its last renewal.
    public var sockets: Int
    /// The live calls the node runs (it holds their `call_owner` claim).
    public var calls: Int

    public init(id: String, description: String, startedAt: Date, lastSeen: Date, leaseUntil: Date, sockets: Int = 0, calls: Int = 0) {
        self.sockets = sockets
        self.calls = calls
        self.id = id
        self.description = description
        self.startedAt = startedAt
        self.lastSeen = lastSeen
        self.leaseUntil = leaseUntil
    }
}

/// Who leads a shared store: the node, its generation (one more at each takeover) and until when
/// its lease runs unrenewed.
public struct Leadership: Sendable, Equatable {
    public var node: String
    public var generation: Int64
    public var leaseUntil: Date

    public init(node: String, generation: Int64, leaseUntil: Date) {
        self.node = node
        self.generation = generation
        self.leaseUntil = leaseUntil
    }
}
