import Foundation
import Logging
import SwitchboardAdmin
import SwitchboardApp
import SwitchboardCore

/// The in-memory twin of the daemon behind the admin API: plain state a test sets and reads.
public final class InMemoryAdminContext: AdminContext, @unchecked Sendable {
    private let lock = NSLock()
    private var connected: Set<PeerID> = []
    private var level = "info"
    private var draining = false
    public let memoryLog = InMemoryAuditLog()
    public var auditLog: any AuditLog { memoryLog }
    public var metrics = "# TYPE switchboard_connections gauge\nswitchboard_connections{kind=\"peerjs\"} 0\n"
    public var listenersUp = true
    public var threadsTurning = true
    public let fixedNow = Date(timeIntervalSince1970: 1_800_000_000)
    /// A real directory over the in-memory store, driven by ``clock``.
    public let clock = ManualClock()
    public let sfuStore = InMemorySFUStore()
    public let directory: SFUDirectory
    public var sfus: any SFUAdministration { directory }
    /// The call administration the routes see; tests set a ``CallHub`` over an in-memory store.
    public var calls: (any CallAdministration)?
    public var webhooks: (any WebhookAdministration)?

    public init(peers: [String] = [], regions: RegionTable = .builtin) {
        connected = Set(peers.compactMap(PeerID.init))
        let fallback = GeoPoint(latitude: 50.11, longitude: 8.68)!
        directory = try! SFUDirectory(
            store: sfuStore, policy: PlacementPolicy(staleAfter: .seconds(10)),
            resolver: LocationResolver(regions: regions.points, fallback: fallback), clock: clock,
            wallClock: { Date(timeIntervalSince1970: 1_800_000_000) }, logger: Logger(label: "test", factory: { _ in SwiftLogNoOpLogHandler() }))
    }

    public var isDraining: Bool { lock.withLock { draining } }

    public func stats() -> AdminStats {
        AdminStats(version: "test", uptimeSeconds: 1, draining: isDraining, peerjs: .init(relay: PeerRelay(configuration: .init())))
    }

    public func peers() -> [PeerID] { lock.withLock { connected.sorted() } }

    public func disconnectPeer(_ id: PeerID) -> Bool { lock.withLock { connected.remove(id) != nil } }

    public func logLevel() -> String { lock.withLock { level } }

    public func setLogLevel(_ level: String) -> Bool {
        let known = ["trace", "debug", "info", "notice", "warning", "error", "critical"]
        guard known.contains(level) else { return false }
        lock.withLock { self.level = level }
        return true
    }

    public func beginDrain() { lock.withLock { draining = true } }

    public func readiness() -> Readiness {
        Readiness(storeWritable: memoryLog.isWritable(), listenersUp: listenersUp, threadsTurning: threadsTurning, draining: isDraining)
    }

    public func metricsText() -> String { metrics }

    /// Minting in the in-memory twin: a recognisable fake token, or `unavailable` when unset.
    public var mintsTokens = true

    public func mintToken(_ request: TokenRequest) throws(SwitchboardError) -> (token: String, claims: UserToken) {
        guard mintsTokens else { throw SwitchboardError(.unavailable, "no API secret is configured") }
        let claims = UserToken(userID: request.userID, issuedAt: fixedNow, expiresAt: fixedNow.addingTimeInterval(TimeInterval(request.ttl.milliseconds) / 1000))
        return ("token-for-\(request.userID)", claims)
    }

    public func now() -> Date { fixedNow }

    /// What `GET /v1/nodes` answers; a failure to throw instead, when set.
    public var clusterView = ClusterView(store: "sqlite", rows: [], leader: nil, current: "", now: Date(timeIntervalSince1970: 1_800_000_000))
    public var clusterFailure: SwitchboardError?

    public func cluster() throws(SwitchboardError) -> ClusterView {
        if let failure = lock.withLock({ clusterFailure }) { throw failure }
        return lock.withLock { clusterView }
    }
}
