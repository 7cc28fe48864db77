import CoreMetrics
import Foundation
import Logging
import Prometheus
import SwitchboardAdmin
import SwitchboardApp
import SwitchboardAuth
import SwitchboardCore
import SwitchboardStore
import SwitchboardTransport

/// The admin API's view of the running daemon: the hub, the transport and the store.
final class DaemonAdminContext: AdminContext, AdminRequestHandler, @unchecked Sendable {
    let hub: SignalingHub
    let transport: LWSServer
    /// The daemon's watchdog view: service threads whose loop stopped turning.
    var stalledThreads: @Sendable () -> [Int] = { [] }
    /// Whether the daemon may write to its PostgreSQL database (its lease, ADR 0012); always
    /// with SQLite, which the state directory's lock keeps to one daemon.
    var storeLeaseHeld: @Sendable () -> Bool = { true }
    /// The daemons sharing the store (`GET /v1/nodes`).
    var clusterView: @Sendable () throws(SwitchboardError) -> ClusterView = { () throws(SwitchboardError) in throw SwitchboardError(.unavailable, "the daemon is starting") }
    let store: any DaemonStore
    let registry: PrometheusCollectorRegistry
    let logLevelControl: LogLevelControl
    let auditLog: any AuditLog
    let sfus: any SFUAdministration
    let tokens: JWTTokenService?
    let callHub: CallHub?
    let webhooks: (any WebhookAdministration)?
    private let startedAt = Date()
    private let wallClock: @Sendable () -> Date
    private let requestDuration: CoreMetrics.Timer
    private let lock = NSLock()
    private var router: AdminRouter?

    init(
        hub: SignalingHub, transport: LWSServer, store: any DaemonStore, directory: SFUDirectory, calls: CallHub?, webhooks: (any WebhookAdministration)?,
        registry: PrometheusCollectorRegistry,
        factory: any MetricsFactory, logLevel: LogLevelControl, tokens: JWTTokenService?, wallClock: @escaping @Sendable () -> Date
    ) {
        self.wallClock = wallClock
        self.sfus = directory
        self.callHub = calls
        self.webhooks = webhooks
        self.tokens = tokens
        self.hub = hub
        self.transport = transport
        self.store = store
        self.registry = registry
        self.logLevelControl = logLevel
        self.auditLog = MeteredAuditLog(base: store, factory: factory)
        self.requestDuration = CoreMetrics.Timer(label: "switchboard_handler_duration_seconds", dimensions: [("handler", "admin")], factory: factory)
    }

    /// Installs the router (built from this context) that ``respond(to:)`` uses.
    func install(_ router: AdminRouter?) { lock.withLock { self.router = router } }

    func respond(to request: HTTPRequest) -> HTTPResponse {
        let started = DispatchTime.now()
        defer { requestDuration.recordNanoseconds(DispatchTime.now().uptimeNanoseconds - started.uptimeNanoseconds) }
        guard let router = lock.withLock({ router }) else {
            return SwitchboardError(.unavailable, "the admin API is starting").httpResponse
        }
        return router.respond(to: request)
    }

    func stats() -> AdminStats {
        let draining = hub.isDraining
        return AdminStats(
            version: SwitchboardVersion.current, uptimeSeconds: Date().timeIntervalSince(startedAt), draining: draining,
            peerjs: hub.withRelay { AdminStats.PeerJSStats(relay: $0) })
    }

    func peers() -> [PeerID] { hub.withRelay { $0.registeredPeers } }

    func disconnectPeer(_ id: PeerID) -> Bool { hub.disconnect(id) }

    func logLevel() -> String { logLevelControl.level.rawValue }

    func setLogLevel(_ level: String) -> Bool {
        guard let parsed = Logger.Level(rawValue: level) else { return false }
        logLevelControl.level = parsed
        return true
    }

    func beginDrain() { hub.beginDraining() }

    func readiness() -> Readiness {
        Readiness(
            storeWritable: storeLeaseHeld() && store.isWritable(), listenersUp: transport.isRunning, threadsTurning: stalledThreads().isEmpty,
            draining: hub.isDraining)
    }

    func metricsText() -> String { registry.emitToString() }

    func mintToken(_ request: TokenRequest) throws(SwitchboardError) -> (token: String, claims: UserToken) {
        guard let tokens else { throw SwitchboardError(.unavailable, "no API secret is configured (auth.api_secret)") }
        let result: Result<(token: String, claims: UserToken), SwitchboardError> = Blocking.wait {
            do throws(SwitchboardError) {
                return .success(try await tokens.issue(request))
            } catch {
                return .failure(error)
            }
        }
        return try result.get()
    }

    func now() -> Date { wallClock() }

    func cluster() throws(SwitchboardError) -> ClusterView { try clusterView() }

    var calls: (any CallAdministration)? { callHub }
}

/// Times every audit commit as `switchboard_sqlite_commit_seconds`.
struct MeteredAuditLog: AuditLog {
    let base: any AuditLog
    let commit: CoreMetrics.Timer

    init(base: any AuditLog, factory: any MetricsFactory) {
        self.base = base
        self.commit = CoreMetrics.Timer(label: "switchboard_sqlite_commit_seconds", dimensions: [("table", "audit_log")], factory: factory)
    }

    func append(_ entry: AuditEntry) throws -> AuditEntry {
        let started = DispatchTime.now()
        defer { commit.recordNanoseconds(DispatchTime.now().uptimeNanoseconds - started.uptimeNanoseconds) }
        return try base.append(entry)
    }

    func entries(limit: Int, before: Int64?) throws -> [AuditEntry] {
        try base.entries(limit: limit, before: before)
    }
}
