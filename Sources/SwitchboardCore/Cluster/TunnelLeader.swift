/// The leading node's side of the tunnel (ADR 0012): sockets and requests that relaying nodes
/// took appear to the leader's hubs as connections of their own, with ids of a thread index no
/// service thread has (``thread``), so the hubs run them exactly as local ones; commands for
/// them go back to the node holding them. Pure: the daemon feeds it the relaying nodes' batches
/// and the hubs' commands.
public struct TunnelLeader: Sendable {
    /// The thread index of relayed connections' ids (service threads count from 0 and are few).
    public static let thread = 255

    /// A connection of a relaying node: the node and its own id for it.
    public struct Remote: Sendable, Hashable {
        public var node: String
        public var connection: ConnectionID
        public init(node: String, connection: ConnectionID) {
            self.node = node
            self.connection = connection
        }
    }

    private var byRemote: [Remote: ConnectionID] = [:]
    private var byLocal: [ConnectionID: Remote] = [:]
    /// The relayed ids of each node.
    private var ofNode: [String: Set<ConnectionID>] = [:]
    private var serial: UInt64 = 0
    /// Per relayed socket, messages of batches that asked for no report, not yet handled (they
    /// come first: a node asks for reports from some batch on, and never stops).
    private var unasked: [ConnectionID: Int] = [:]
    /// Handled messages not yet reported, per relaying node and its ids (``takeReports()``).
    public private(set) var reports: [String: [ConnectionID: Int]] = [:]
    /// Sockets of relaying nodes that sent a message for a connection this leader does not hold
    /// (it dropped them: their node's lease lapsed, or a batch to it was lost), to be closed there
    /// (``takeOrphans()``): nothing stands behind them here.
    public private(set) var orphans: [String: Set<ConnectionID>] = [:]

    public init() {}

    /// Whether `id` is a relayed connection's.
    @inline(__always)
    public static func isRelayed(_ id: ConnectionID) -> Bool { id.thread == thread }

    /// How many relayed connections (sockets and requests awaiting their answer) there are.
    public var count: Int { byLocal.count }

    /// The nodes holding relayed connections.
    public var nodes: [String] { ofNode.keys.sorted() }

    /// The relayed connections of `node`.
    public func connections(of node: String) -> Set<ConnectionID> { ofNode[node] ?? [] }

    /// `node`'s events, with its ids replaced by relayed ones. An `opened` or a `request` gets a
    /// new id; a message or a close of an unknown connection is dropped (a message reported
    /// handled at once when `reports` asks, and its socket listed in ``orphans``); after a
    /// `closed` the id is forgotten.
    public mutating func inbound(from node: String, _ events: [TransportEvent], reports: Bool = false) -> [TransportEvent] {
        var mapped: [TransportEvent] = []
        mapped.reserveCapacity(events.count)
        for event in events {
            switch event {
            case .opened(let id, let upgrade):
                mapped.append(.opened(open(Remote(node: node, connection: id), into: &mapped), upgrade))
            case .request(let id, let request):
                mapped.append(.request(open(Remote(node: node, connection: id), into: &mapped), request))
            case .message(let id, let bytes, let isBinary):
                if let local = byRemote[Remote(node: node, connection: id)] {
                    mapped.append(.message(local, bytes, isBinary: isBinary))
                    if !reports { unasked[local, default: 0] += 1 }
                } else {
                    if reports { self.reports[node, default: [:]][id, default: 0] += 1 }
                    orphans[node, default: []].insert(id)
                }
            case .closed(let id):
                if let local = byRemote[Remote(node: node, connection: id)] {
                    forget(local)
                    mapped.append(.closed(local))
                }
            }
        }
        return mapped
    }

    /// The hubs handled `events` (a batch they were given): the relayed messages among them
    /// whose batch asked are added to ``reports``.
    public mutating func handled(_ events: [TransportEvent]) {
        for case .message(let id, _, _) in events where Self.isRelayed(id) {
            if let skip = unasked[id] {
                unasked[id] = skip > 1 ? skip - 1 : nil
            } else if let remote = byLocal[id] {
                reports[remote.node, default: [:]][remote.connection, default: 0] += 1
            }
        }
    }

    /// The reports gathered since the last call, per relaying node.
    public mutating func takeReports() -> [String: [ConnectionID: Int]] {
        defer { reports = [:] }
        return reports
    }

    /// The reports gathered for `node` since the last call (they ride on a batch going there).
    public mutating func takeReports(for node: String) -> [ConnectionID: Int] {
        reports.removeValue(forKey: node) ?? [:]
    }

    /// The orphaned sockets found since the last call, as the closes (1012) to send each node.
    public mutating func takeOrphans() -> [String: [OutboundCommand]] {
        defer { orphans = [:] }
        return orphans.mapValues { ids in ids.sorted().map { .close($0, .serviceRestart, reason: Self.orphanedReason) } }
    }

    /// Why an orphaned socket is closed.
    public static let orphanedReason = "the leading node no longer holds this socket; reconnect"

    /// Splits the hubs' commands into this node's own and, per relaying node, theirs (with their
    /// ids back). A response ends its relayed request; commands for forgotten ids are dropped.
    public mutating func outbound(_ commands: [OutboundCommand]) -> (local: [OutboundCommand], remote: [String: [OutboundCommand]]) {
        var local: [OutboundCommand] = []
        var remote: [String: [OutboundCommand]] = [:]
        for command in commands {
            let id = command.connection
            guard Self.isRelayed(id) else {
                local.append(command)
                continue
            }
            guard let target = byLocal[id] else { continue }
            remote[target.node, default: []].append(command.readdressed(to: target.connection))
            if case .respond = command { forget(id) }
        }
        return (local, remote)
    }

    /// `node` is gone (dead, stopped, or its messages may have been lost): a `closed` for each of
    /// its connections, for the hubs (a request's is ignored there), all forgotten.
    public mutating func drop(node: String) -> [TransportEvent] {
        guard let ids = ofNode[node] else { return [] }
        for id in ids { forget(id) }
        return ids.sorted().map { .closed($0) }
    }

    /// Every relaying node's connections, as ``drop(node:)`` does for one.
    public mutating func dropAll() -> [TransportEvent] {
        nodes.flatMap { drop(node: $0) }
    }

    /// A new id for `remote`; one it still had (a node that reused an id) is closed first.
    private mutating func open(_ remote: Remote, into mapped: inout [TransportEvent]) -> ConnectionID {
        if let stale = byRemote[remote] {
            forget(stale)
            mapped.append(.closed(stale))
        }
        serial += 1
        let id = ConnectionID(thread: Self.thread, serial: serial)
        byRemote[remote] = id
        byLocal[id] = remote
        ofNode[remote.node, default: []].insert(id)
        return id
    }

    private mutating func forget(_ id: ConnectionID) {
        unasked[id] = nil
        guard let remote = byLocal.removeValue(forKey: id) else { return }
        byRemote[remote] = nil
        ofNode[remote.node]?.remove(id)
        if ofNode[remote.node]?.isEmpty == true { ofNode[remote.node] = nil }
    }
}

extension OutboundCommand {
    /// The same command for connection `id`.
    func readdressed(to id: ConnectionID) -> OutboundCommand {
        switch self {
        case .send(_, let bytes): .send(id, bytes)
        case .sendBinary(_, let bytes): .sendBinary(id, bytes)
        case .close(_, let code, let reason): .close(id, code, reason: reason)
        case .respond(_, let response): .respond(id, response)
        }
    }
}
