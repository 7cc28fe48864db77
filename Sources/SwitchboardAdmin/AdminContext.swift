import Foundation
import SwitchboardCore

/// What the admin routes need from the running daemon. The composition root implements it
/// over the hub, the transport and the store; tests use an in-memory twin.
public protocol AdminContext: Sendable {
    /// Counters and gauges for `/v1/stats`.
    func stats() -> AdminStats
    /// Registered PeerJS ids, sorted.
    func peers() -> [PeerID]
    /// Closes the socket holding `id` and frees the id; `false` when not registered.
    func disconnectPeer(_ id: PeerID) -> Bool
    /// The current log level's name.
    func logLevel() -> String
    /// Sets the log level; `false` when `level` is not a level's name.
    func setLogLevel(_ level: String) -> Bool
    /// Stops accepting new sessions; readiness turns false.
    func beginDrain()
    /// What `/readyz` reports.
    func readiness() -> Readiness
    /// Prometheus text exposition of every metric.
    func metricsText() -> String
    /// The append-only audit log.
    var auditLog: any AuditLog { get }
    /// The SFU location table and placement.
    var sfus: any SFUAdministration { get }
    /// Calls: history, detail, end, session removal, connections; `nil` when the call
    /// protocol is off.
    var calls: (any CallAdministration)? { get }
    /// Webhook endpoints and deliveries, and push devices; `nil` when the call protocol is off.
    var webhooks: (any WebhookAdministration)? { get }
    /// Mints a user token; `unavailable` when no API secret is configured.
    func mintToken(_ request: TokenRequest) throws(SwitchboardError) -> (token: String, claims: UserToken)
    /// The wall clock, for audit entries.
    func now() -> Date
    /// The daemons sharing the store and which one leads (`GET /v1/nodes`).
    func cluster() throws(SwitchboardError) -> ClusterView
}

/// The daemon's readiness: ready when the store takes writes, the listeners are up and it is
/// not draining.
public struct Readiness: Sendable, Equatable, Codable {
    public var storeWritable: Bool
    public var listenersUp: Bool
    /// Every service thread's loop turned recently (none is stuck in a callback).
    public var threadsTurning: Bool
    public var draining: Bool

    public init(storeWritable: Bool, listenersUp: Bool, threadsTurning: Bool = true, draining: Bool) {
        self.storeWritable = storeWritable
        self.listenersUp = listenersUp
        self.threadsTurning = threadsTurning
        self.draining = draining
    }

    public var ready: Bool { storeWritable && listenersUp && threadsTurning && !draining }
}

/// The figures `/v1/stats` returns.
public struct AdminStats: Sendable, Equatable, Codable {
    public var version: String
    public var uptimeSeconds: Double
    public var draining: Bool
    public var peerjs: PeerJSStats

    public init(version: String, uptimeSeconds: Double, draining: Bool, peerjs: PeerJSStats) {
        self.version = version
        self.uptimeSeconds = uptimeSeconds
        self.draining = draining
        self.peerjs = peerjs
    }

    /// PeerJS relay figures.
    public struct PeerJSStats: Sendable, Equatable, Codable {
        public var sockets: Int
        public var peers: Int
        public var queuedMessages: Int
        public var queuedBytes: Int
        public var relayed: [String: Int]
        public var queued: Int
        public var deliveredFromQueue: Int
        public var expired: Int
        public var overflowed: Int
        public var malformed: Int
        public var ignored: Int
        public var dropped: Int
        public var timedOut: Int
        public var refused: [String: Int]

        public init(relay: PeerRelay) {
            sockets = relay.socketCount
            peers = relay.registeredCount
            queuedMessages = relay.queueDepth.messages
            queuedBytes = relay.queueDepth.bytes
            let stats = relay.stats
            relayed = Dictionary(uniqueKeysWithValues: stats.relayed.map { ($0.key.rawValue, $0.value) })
            queued = stats.queued
            deliveredFromQueue = stats.deliveredFromQueue
            expired = stats.expired
            overflowed = stats.overflowed
            malformed = stats.malformed
            ignored = stats.ignored
            dropped = stats.dropped
            timedOut = stats.timedOut
            refused = stats.refused
        }
    }
}
