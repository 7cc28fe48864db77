import Foundation
import SwitchboardCore

/// The in-memory twin of the call ownership a shared store keeps (`call_owner` on PostgreSQL):
/// a ``Table`` several nodes share, one ``InMemoryCallOwnership`` per node. A node is live from
/// its first handle until ``Table/lapse(_:)``; ``Table/renew(_:)`` brings it back.
public final class InMemoryCallOwnership: CallOwnership, @unchecked Sendable {
    /// What every node sees: each call's owner and which nodes' leases lapsed.
    public final class Table: @unchecked Sendable {
        let lock = NSLock()
        var owners: [CallCID: CallOwner] = [:]
        var live: Set<String> = []
        /// When each lapsed node's lease lapsed (on ``clock``).
        var lapsedAt: [String: Date] = [:]
        let clock: @Sendable () -> Date
        /// The store the nodes share, for the live calls (``orphans(limit:)``).
        let calls: InMemoryCallStore

        /// `clock` times lapses (a test moves it by hand); `calls` is the store the nodes share.
        public init(calls: InMemoryCallStore, clock: @escaping @Sendable () -> Date = { Date() }) {
            self.calls = calls
            self.clock = clock
        }

        /// Node `node`'s lease lapses: another node may take its calls.
        public func lapse(_ node: String) {
            lock.withLock {
                _ = live.remove(node)
                lapsedAt[node] = clock()
            }
        }

        /// Node `node` renews its lease again.
        public func renew(_ node: String) {
            lock.withLock {
                _ = live.insert(node)
                lapsedAt[node] = nil
            }
        }

        /// Whether `node` is registered and its lease lapsed at least `window` ago (or it never
        /// registered); the caller holds ``holding(_:)``.
        func gone(_ node: String, for window: Duration) -> Bool {
            guard !live.contains(node) else { return false }
            guard let lapsed = lapsedAt[node] else { return true }
            return clock().timeIntervalSince(lapsed) >= Double(window.components.seconds) + Double(window.components.attoseconds) / 1e18
        }

        /// Runs `body` while no claim can change an owner (as a row lock held by a write).
        func holding<T>(_ body: () throws -> T) rethrows -> T { try lock.withLock(body) }
    }

    public let node: String
    public let table: Table
    /// The generation this node claimed each call it holds at.
    private var claimed: [CallCID: Int64] = [:]

    public init(node: String, table: Table = Table(calls: InMemoryCallStore())) {
        self.node = node
        self.table = table
        table.renew(node)
    }

    public func claim(_ cids: [CallCID]) throws -> [CallCID: CallOwner] {
        table.holding {
            var result: [CallCID: CallOwner] = [:]
            guard table.live.contains(node) else {
                // A node whose own lease lapsed claims nothing.
                for cid in cids { result[cid] = table.owners[cid] }
                return result
            }
            for cid in Set(cids) {
                let owner: CallOwner
                switch table.owners[cid] {
                case nil: owner = CallOwner(node: node, generation: 1)
                case let held? where held.node == node: owner = held
                case let held? where !table.live.contains(held.node): owner = CallOwner(node: node, generation: held.generation + 1)
                case let held?: owner = held
                }
                table.owners[cid] = owner
                if owner.node == node { claimed[cid] = owner.generation } else { claimed[cid] = nil }
                result[cid] = owner
            }
            return result
        }
    }

    public func release(_ cids: [CallCID]) throws {
        table.holding {
            for cid in cids where table.owners[cid]?.node == node {
                table.owners[cid] = nil
                claimed[cid] = nil
            }
        }
    }

    public func owners(of cids: [CallCID]) throws -> [CallCID: CallOwner] {
        table.holding { table.owners.filter { cids.contains($0.key) } }
    }

    public func holds(_ cid: CallCID) -> Bool {
        table.holding { claimed[cid] != nil }
    }

    public func orphans(limit: Int) throws -> [CallCID] {
        try table.holding {
            try table.calls.loadLiveState().calls.map(\.cid)
                .filter { cid in table.owners[cid].map { !table.live.contains($0.node) } ?? true }
                .sorted { $0.cid.utf8.lexicographicallyPrecedes($1.cid.utf8) }
                .prefix(max(0, limit)).map { $0 }
        }
    }

    public var held: Set<CallCID> {
        table.holding { Set(claimed.keys) }
    }

    /// Refuses (`unavailable`) a batch touching a call this node does not hold at the generation
    /// it claimed; the caller holds ``Table/holding(_:)``.
    func admit(_ mutations: [CallMutation]) throws {
        for text in CallMutation.calls(in: mutations).sorted() {
            guard let cid = CallCID(cid: text), let generation = claimed[cid] else {
                throw SwitchboardError(.unavailable, "call \(text) is not claimed by node \(node)")
            }
            guard table.owners[cid] == CallOwner(node: node, generation: generation) else {
                claimed[cid] = nil
                throw SwitchboardError(.unavailable, "call \(text) was taken over from node \(node) by another node")
            }
        }
    }
}

/// One node's view of an ``InMemoryCallStore`` several nodes share: its writes are refused
/// unless the node holds every call they touch (the check and the write under one lock, as
/// PostgreSQL's row lock makes a takeover wait for a write under way).
public final class OwnedCallStore: CallStore, @unchecked Sendable {
    public let base: InMemoryCallStore
    public let ownership: InMemoryCallOwnership

    public init(base: InMemoryCallStore, ownership: InMemoryCallOwnership) {
        self.base = base
        self.ownership = ownership
    }

    /// Connections it saves are stamped with its node (as ``ConnectionRecord/node`` says); one
    /// another live node holds now is neither saved over nor deleted (PostgreSQL's fenced writes).
    public func apply(_ mutations: [CallMutation]) throws {
        let node = ownership.node
        let stamped = mutations.map { mutation -> CallMutation in
            guard case .saveConnection(var connection) = mutation else { return mutation }
            connection.node = node
            return .saveConnection(connection)
        }
        try ownership.table.holding {
            try ownership.admit(stamped)
            let holders = Dictionary(try base.loadLiveState().connections.map { ($0.id, $0.node) }, uniquingKeysWith: { first, _ in first })
            let heldElsewhere = { (id: ClientConnectionID) in
                holders[id].flatMap { $0 }.map { $0 != node && !self.ownership.table.gone($0, for: .zero) } ?? false
            }
            try base.apply(
                stamped.filter { mutation in
                    switch mutation {
                    case .saveConnection(let connection): !heldElsewhere(connection.id)
                    case .deleteConnection(let id): !heldElsewhere(id)
                    default: true
                    }
                })
        }
    }

    public func takeConnection(resumeToken: String, user: UserID) throws -> ConnectionTakeover? {
        try ownership.table.holding {
            let live = try base.loadLiveState()
            guard var record = live.connections.first(where: { $0.resumeToken == resumeToken && $0.userID == user }) else {
                return nil
            }
            let previous = record.node
            record.node = ownership.node
            try base.apply([.saveConnection(record)])
            let calls = Set(live.calls.map(\.cid))
            let sessions = live.sessions.filter { $0.connection == record.id && $0.isActive && calls.contains($0.cid) }
            return ConnectionTakeover(record: record, previous: previous, sessions: sessions)
        }
    }

    public func lostConnections(_ ids: Set<ClientConnectionID>, after window: Duration) throws -> Set<ClientConnectionID> {
        try ownership.table.holding {
            let rows = Dictionary(try base.loadLiveState().connections.map { ($0.id, $0) }, uniquingKeysWith: { first, _ in first })
            return ids.filter { id in
                guard let row = rows[id] else { return true }
                return row.node.map { ownership.table.gone($0, for: window) } ?? false
            }
        }
    }

    public func loadLiveState() throws -> CallStateSnapshot { try base.loadLiveState() }
    public func loadCall(_ cid: CallCID) throws -> (call: CallRecord, members: [MemberRecord])? { try base.loadCall(cid) }
    public func listCalls(_ query: CallQuery) throws -> CallPage { try base.listCalls(query) }
    public func callDetail(_ cid: CallCID, eventLimit: Int) throws -> CallDetail? { try base.callDetail(cid, eventLimit: eventLimit) }
    public func lastEvent(of cid: CallCID, type: String) throws -> CallEventRecord? { try base.lastEvent(of: cid, type: type) }
}
