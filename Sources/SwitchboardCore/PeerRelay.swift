/// The PeerJS relay as a pure state machine: the peer registry, offline queues and liveness.
///
/// Every entry point takes the current time and appends the resulting ``RelayEffect``s to a
/// caller-owned buffer; nothing here performs I/O or reads a clock. The host (the app's serial
/// queue) feeds it transport events and executes the effects.
public struct PeerRelay: Sendable {
    /// A registered id and the socket that currently holds it.
    struct Registration: Sendable {
        let token: String
        var connection: ConnectionID
    }

    /// One open PeerJS socket.
    struct Socket: Sendable {
        /// The id this socket speaks for, once the handshake passed and until LEAVE.
        var peer: PeerID?
        var lastSeen: MonotonicTime
        var malformedBudget: TokenBucket
        var messageBudget: MessageBudget
        /// With signed ids: when the token the socket opened with expires (it is closed then).
        var tokenExpiresAt: MonotonicTime? = nil
    }

    /// The settings in force.
    public private(set) var configuration: RelayConfiguration
    /// Running counters.
    public internal(set) var stats = RelayStats()

    var registrations: [PeerID: Registration] = [:]
    var sockets: [ConnectionID: Socket] = [:]
    var queues = OfflineQueues()
    /// Senders already told (EXPIRE) that a destination is unreachable.
    var expiryNotices = ExpiryNotices()

    /// An empty relay.
    public init(configuration: RelayConfiguration) {
        self.configuration = configuration
    }

    /// Ids currently registered, sorted.
    public var registeredPeers: [PeerID] { registrations.keys.sorted() }

    /// Number of registered ids (O(1), unlike ``registeredPeers``).
    public var registeredCount: Int { registrations.count }

    /// Whether `id` is registered.
    public func isRegistered(_ id: PeerID) -> Bool { registrations[id] != nil }

    /// The socket that holds `id`, if registered.
    public func connection(of id: PeerID) -> ConnectionID? { registrations[id]?.connection }

    /// The id a socket speaks for, if any.
    public func peer(on connection: ConnectionID) -> PeerID? { sockets[connection]?.peer }

    /// Open PeerJS sockets, registered or not.
    public var socketCount: Int { sockets.count }

    /// Messages and bytes waiting in offline queues.
    public var queueDepth: (messages: Int, bytes: Int) { (queues.totalCount, queues.totalBytes) }

    /// Number of destinations with at least one queued message.
    public var queuedDestinations: Int { queues.byDestination.count }

    /// The socket closed (by either side). Frees its id if it is the id's current socket.
    public mutating func connectionClosed(_ connection: ConnectionID) {
        defer {
            sockets.releaseSpareCapacity()
            registrations.releaseSpareCapacity()
        }
        guard let socket = sockets.removeValue(forKey: connection), let peer = socket.peer else { return }
        if registrations[peer]?.connection == connection {
            registrations[peer] = nil
        }
    }

    /// An operator disconnects `id` (admin API): its socket is closed and the id freed.
    public mutating func disconnect(_ id: PeerID, into effects: inout [RelayEffect]) -> Bool {
        guard let registration = registrations.removeValue(forKey: id) else { return false }
        sockets[registration.connection]?.peer = nil
        effects.append(.close(registration.connection, .normal, reason: "disconnected by operator"))
        return true
    }
}
