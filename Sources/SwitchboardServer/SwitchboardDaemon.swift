import CoreMetrics
import Dispatch
import Foundation
import Logging
import Prometheus
import ServiceLifecycle
import SwitchboardAdmin
import SwitchboardApp
import SwitchboardAuth
import SwitchboardCore
import SwitchboardPostgres
import SwitchboardSFU
import SwitchboardStore
import SwitchboardTransport
import SwitchboardWebhooks

/// The whole daemon, wired: the libwebsockets transport feeding the signaling hub.
///
/// This is the composition root: `switchboard serve` and the integration tests both build the
/// daemon here, so tests run exactly what operators run.
public final class SwitchboardDaemon: Service, @unchecked Sendable {
    /// The validated configuration.
    public let configuration: SwitchboardConfiguration
    /// The application hub (exposed for tests and the admin API).
    public let hub: SignalingHub
    let transport: LWSServer
    let logger: Logger
    private let logLevel: LogLevelControl
    let registry = PrometheusCollectorRegistry()
    private let lock = NSLock()
    private var started = false
    private var stopped = false
    /// The store (after ``start()``): SQLite or PostgreSQL (`store.kind`).
    public private(set) var store: (any DaemonStore)?
    private var stateLock: ProcessLock?
    /// This daemon's hold on its PostgreSQL database (`store.kind` postgres).
    var storeLease: StoreLease? {
        get { lock.withLock { lease } }
        set { lock.withLock { lease = newValue } }
    }
    private var lease: StoreLease?
    /// With PostgreSQL and `store.postgres_standby` relay: the relay between this daemon's
    /// transport and the leading daemon's hubs (``ClusterTunnel``).
    var clusterTunnel: ClusterTunnel? {
        get { lock.withLock { tunnel } }
        set { lock.withLock { tunnel = newValue } }
    }
    private var tunnel: ClusterTunnel?
    /// With `store.postgres_calls` spread: this daemon's call hub and directory, from its start.
    var spreadCalls: SpreadCalls? {
        get { lock.withLock { spread } }
        set { lock.withLock { spread = newValue } }
    }
    private var spread: SpreadCalls?
    /// This daemon's id among the daemons of its database (`GET /v1/nodes`), new at each start.
    public let nodeID = UUID().uuidString.lowercased()
    let startedAt = Date()
    /// Set when a graceful shutdown was asked for while the daemon stood by.
    var standbyCancelled: Bool { lock.withLock { cancelledStandby } }
    private var cancelledStandby = false
    /// Whether another daemon took the lead of the database from this one (it was frozen or
    /// cut off past its lease); ``run()`` then stops and `serve` exits 75, to be restarted.
    public var deposed: Bool { lock.withLock { wasDeposedFlag } }
    private var wasDeposedFlag = false
    private let (deposedEvents, deposedContinuation) = AsyncStream<Void>.makeStream()
    /// How long a service thread's loop may go without turning before `/readyz` fails (a
    /// healthy loop turns at least every 100 ms).
    public var watchdogThreshold: Duration {
        get { lock.withLock { threshold } }
        set { lock.withLock { threshold = newValue } }
    }
    private var threshold: Duration = .seconds(5)

    /// Service threads whose loop has not turned within ``watchdogThreshold``.
    public func stalledThreads() -> [Int] { transport.stalledThreads(threshold: watchdogThreshold) }

    /// Testing only: blocks service thread `index` until `release` is signalled.
    public func stallServiceThreadForTesting(_ index: Int, until release: DispatchSemaphore) {
        transport.stallForTesting(thread: index, until: release)
    }

    /// Service threads that did not stop at shutdown (stuck in a callback); `serve` exits
    /// non-zero when there are any.
    public private(set) var stuckThreads: [Int] = []
    private var adminContext: DaemonAdminContext?
    /// The location table and placement (after ``start()``).
    public private(set) var directory: SFUDirectory?
    /// Polls pulled SFUs (kind `janus`) for health and load (after ``start()``).
    public private(set) var poller: SFUPoller?
    /// The SFU adapters' HTTP client (after ``start()``; shut down at the end of ``shutdown()``).
    private var httpClient: AsyncHTTPPoster?
    /// Keeps each Janus's rooms and tokens what the live calls need (after ``start()``).
    public private(set) var rooms: JanusRoomReconciler?
    /// The call protocol (after ``start()``; `nil` when `connect.path` is empty).
    public private(set) var calls: CallHub?
    /// The webhook delivery worker (after ``start()``; `nil` when the call protocol is off).
    public private(set) var webhooks: WebhookDispatcher?
    private var webhookClient: WebhookDeliveryClient?
    /// The executable the webhook worker process runs (`webhooks.worker_process`): the daemon's
    /// own. Tests that run the daemon in their own process point it at the built `switchboard`.
    public var webhookWorkerExecutable = URL(fileURLWithPath: "/proc/self/exe")

    /// The worker and what makes its attempts, for ``stopWebhooks()``.
    func lockedWebhooks() -> (WebhookDispatcher, WebhookDeliveryClient)? {
        lock.withLock { webhooks.flatMap { dispatcher in webhookClient.map { (dispatcher, $0) } } }
    }
    /// The clocks and id generator every component is built with.
    public let clocks: DaemonClocks

    /// Builds the daemon; nothing is opened or bound until ``start()``. `logLevel` is the
    /// control the process's log handlers follow (the admin API and SIGHUP change it);
    /// `clocks` are the time and id sources of every component (tests move time by hand).
    public init(configuration: SwitchboardConfiguration, logger: Logger, logLevel: LogLevelControl? = nil, clocks: DaemonClocks = .system) {
        self.configuration = configuration
        self.clocks = clocks
        self.logger = logger
        self.logLevel = logLevel ?? LogLevelControl(configuration.logLevel)
        let factory = PrometheusMetricsFactory(registry: registry)
        self.hub = SignalingHub(
            relay: configuration.relay, routes: configuration.peerJSRoutes, clock: clocks.monotonic, newPeerID: clocks.newID, metricsFactory: factory,
            logger: logger)
        hub.limit(configuration.limits)
        if let echo = configuration.echoPath {
            logger.warning("testing.echo_path is set: \(echo) echoes every message (for conformance tests only)")
            hub.enableEcho(path: echo)
        }
        // Every close the daemon starts, by code, counted where the transport takes it: PeerJS,
        // the call protocol, caps, 1009 and the drain alike.
        let closes = LabelledCounters("switchboard_closes_total", by: "code", factory: factory)
        self.transport = LWSServer(configuration: configuration.transport, logger: logger, onClose: { code in
            closes.increment(String(code.rawValue))
        })
    }

    /// The bound client port (after ``start()``).
    public var port: Int { transport.boundPort(of: .client) ?? 0 }

    /// The bound admin port (after ``start()``).
    public var adminPort: Int { transport.boundPort(of: .admin) ?? 0 }

    /// The PeerJS WebSocket URL clients connect to.
    public var webSocketURL: String {
        guard let client = configuration.transport.listener(.client) else { return "" }
        return "\(client.usesTLS ? "wss" : "ws")://\(Self.format(client.host)):\(port)\(configuration.peerJSRoutes.webSocketPath)"
    }

    /// The call-protocol WebSocket URL (`connect.path`), empty when it is off.
    public var connectURL: String {
        guard let client = configuration.transport.listener(.client), let path = configuration.connectPath else { return "" }
        return "\(client.usesTLS ? "wss" : "ws")://\(Self.format(client.host)):\(port)\(path)"
    }

    /// The admin API's base URL.
    public var adminURL: String {
        guard let admin = configuration.transport.listener(.admin) else { return "" }
        return "http://\(Self.format(admin.host)):\(adminPort)"
    }

    private static func format(_ host: String) -> String { host.contains(":") ? "[\(host)]" : host }

    /// Opens the store (applying migrations), binds the listeners and starts serving.
    public func start() throws {
        let stateLock = try ProcessLock(directory: configuration.store.directory)
        ProcessMemory.fixThresholds()
        let factory = PrometheusMetricsFactory(registry: registry)
        let store = try openStore(factory: factory)
        let spread = spreadCalls
        // Spread calls: the directory that followed the store leads now, the hub stays.
        spread?.directory.stopFollowing()
        let directory = try spread?.directory ?? makeDirectory(store: store, factory: factory)
        let auth = configuration.auth
        let tokens = spread?.tokens ?? Blocking.wait { await JWTTokenService(configuration: auth) }
        try store.replaceRegions(configuration.placement.regions)
        try directory.seed(configuration.placement.loadSeed())
        let webhooks = configuration.connectPath == nil ? nil : makeWebhooks(store: store, factory: factory)
        let calls = try startCalls(store: store, directory: directory, tokens: tokens, webhooks: webhooks, factory: factory)
        try webhooks?.dispatcher.start()
        if let dispatcher = webhooks?.dispatcher { directory.sendWebhooks(configuration.calls.webhooks, to: dispatcher.committed) }
        let context = DaemonAdminContext(
            hub: hub, transport: transport, store: store, directory: directory, calls: calls,
            webhooks: webhooks.flatMap { webhooks in calls.map { WebhookAdmin(dispatcher: webhooks.dispatcher, hub: $0) } }, registry: registry,
            factory: factory, logLevel: logLevel, tokens: tokens, wallClock: clocks.wall)
        context.stalledThreads = { [weak self] in self?.stalledThreads() ?? [] }
        context.storeLeaseHeld = { [weak self] in self?.storeLease?.held ?? true }
        context.clusterView = { [weak self] () throws(SwitchboardError) in
            guard let self else { throw SwitchboardError(.unavailable, "the daemon stopped") }
            return try self.clusterView(store)
        }
        context.install(AdminRoutes.router(configuration: try adminConfiguration(store), context: context))
        // The hub is ready before the first connection can arrive.
        let clientRoutes = DaemonClientRoutes(
            configuration: configuration.http, mint: DevTokenRoute(mint: { [context] request throws(SwitchboardError) in try context.mintToken(request) }),
            logger: logger)
        hub.start(transport: clusterTunnel ?? transport, admin: context, client: clientRoutes, tokens: tokens)
        if configuration.placement.pollCapped {
            logger.notice(
                "SFU polls capped at a quarter of placement.stale_after_ms",
                metadata: ["poll_interval": "\(configuration.placement.pollInterval)", "poll_timeout": "\(configuration.placement.pollTimeout)"])
        }
        let httpClient = AsyncHTTPPoster()
        let janus = JanusAdminClient(http: httpClient, timeout: configuration.placement.pollTimeout)
        let rooms = directory.roomKeys.map { keys in
            JanusRoomReconciler(
                targets: directory.pollTargets, desired: desiredRooms(store: store, calls: calls), keys: keys, janus: janus,
                metricsFactory: factory, logger: logger)
        }
        directory.start { [logger] moves in
            for move in moves {
                logger.notice("call moved off a failed SFU", metadata: ["call.cid": "\(move.callID)", "sfu.from": "\(move.from)", "sfu.to": "\(move.to.map(\.rawValue) ?? "none")"])
            }
            DispatchQueue.global().async {
                calls?.sfusReassigned(moves, lookup: directory.current)
                // The moved calls want rooms on their new SFUs now, not at the next periodic run.
                rooms?.kick()
            }
        }
        // Moves a stop interrupted before the call hub logged them (ADR 0011).
        if let announced = calls?.announceFailovers(directory.allPlacements(), lookup: directory.current), !announced.isEmpty {
            logger.notice("announced SFU moves that a stop interrupted", metadata: ["calls": "\(announced.map(\.cid))"])
        }
        let poller = SFUPoller(
            targets: directory.pollTargets, report: directory.polled, janus: janus, interval: configuration.placement.pollInterval,
            wallClock: clocks.wall, logger: logger)
        poller.start()
        if let rooms {
            calls?.onRoomsChanged { rooms.kick() }
            rooms.start(interval: configuration.placement.pollInterval)
        }
        hearOtherNodes(store: store, dispatcher: webhooks?.dispatcher, rooms: rooms)
        do {
            try lock.withLock {
                precondition(!started, "start() called twice")
                started = true
                self.store = store
                self.stateLock = stateLock
                self.adminContext = context
                self.directory = directory
                self.poller = poller
                self.httpClient = httpClient
                self.rooms = rooms
                self.calls = calls
                self.webhooks = webhooks?.dispatcher
                self.webhookClient = webhooks?.client
                if let tunnel, let generation = lease?.leading?.generation {
                    // The transport runs since the daemon relayed as a standby: the hubs take over.
                    tunnel.lead(hub: hub, generation: generation)
                } else {
                    try transport.start(sink: hub)
                }
            }
        } catch {
            calls?.stop()
            hub.stop()
            poller.stop()
            rooms?.stop()
            httpClient.shutdown()
            webhooks?.dispatcher.stop()
            webhooks?.client.shutdown()
            directory.stop()
            throw error
        }
        logger.notice(
            "switchboard ready",
            metadata: [
                "url": "\(webSocketURL)", "admin": "\(adminURL)", "threads": "\(configuration.transport.serviceThreads)",
                "store": "\(storeDescription)",
            ])
    }

    /// SIGHUP: applies the reloaded configuration's log level and SFU seed file.
    public func reload(_ reloaded: SwitchboardConfiguration) throws {
        logLevel.level = reloaded.logLevel
        try store?.replaceRegions(reloaded.placement.regions)
        try directory?.replaceRegions(reloaded.placement.resolver)
        try directory?.seed(reloaded.placement.loadSeed())
    }

    /// Graceful stop: refuse new sockets, close open ones with 1001, wait up to the drain
    /// timeout, then tear everything down. Idempotent.
    public func shutdown() {
        let first = lock.withLock {
            defer { stopped = true }
            return started && !stopped
        }
        guard first else { return }
        logger.notice("draining", metadata: ["sockets": "\(transport.webSocketCount)"])
        hub.beginDraining()
        // Sockets other daemons relay to this one: their clients go to the next leader now.
        clusterTunnel?.closeRelayed(.goingAway, reason: "server is shutting down")
        let clean = transport.drain(code: .goingAway, timeout: configuration.drainTimeout)
        if !clean { logger.warning("drain timeout passed with sockets still open; closing them") }
        let bound = max(.seconds(1), min(configuration.drainTimeout, .seconds(5)))
        let stuck = transport.stop(timeout: bound)
        if !stuck.isEmpty {
            logger.critical("service threads did not stop (stuck); exiting without them", metadata: ["threads": "\(stuck)"])
            lock.withLock { stuckThreads = stuck }
        }
        // Each step bounded and named in the log: a store or bus that stopped answering must
        // neither hold the stop past its time nor hide where it waits.
        let steps = ShutdownSteps(bound: bound, logger: logger)
        steps.run("call hub") { [self] in
            spreadCalls?.announcer.cancel()
            calls?.stop()
            hub.stop()
        }
        steps.run("cluster tunnel") { [self] in stopTunnel() }
        steps.run("SFU rooms and polling") { [self] in
            calls?.onRoomsChanged(nil)
            lock.withLock { poller }?.stop()
            lock.withLock { rooms }?.stop()
            lock.withLock { httpClient }?.shutdown()
        }
        steps.run("webhooks") { [self] in stopWebhooks() }
        steps.run("SFU directory") { [self] in
            directory?.stop()
            lock.withLock { adminContext }?.install(nil)
        }
        steps.run("store") { [self] in closeStore() }
        lock.withLock { stateLock = nil }
        logger.notice("stopped", metadata: steps.leftBehind.isEmpty ? [:] : ["left_behind": "\(steps.leftBehind)"])
    }

    /// Runs until a graceful shutdown is requested (ServiceLifecycle), or until another daemon
    /// takes the lead of the database from this one, then shuts down. On PostgreSQL the start
    /// stands by while another daemon leads; a shutdown asked for then ends the wait.
    public func run() async throws {
        do {
            try await withGracefulShutdownHandler {
                try await Self.onThread { [self] in try start() }
            } onGracefulShutdown: { [weak self] in
                self?.cancelStandby()
            }
        } catch is StoreLease.Cancelled {
            logger.notice("stopped while standing by")
            return
        }
        let deposed = deposedEvents
        await withTaskGroup(of: Void.self) { group in
            group.addTask { try? await gracefulShutdown() }
            group.addTask {
                var events = deposed.makeAsyncIterator()
                _ = await events.next()
            }
            await group.next()
            group.cancelAll()
        }
        let forceExit = SignalEscalation.armed(logger: logger)
        shutdown()
        forceExit.disarm()
    }

    /// Ends a standby wait: the start throws ``StoreLease/Cancelled``.
    func cancelStandby() {
        let lease = lock.withLock {
            cancelledStandby = true
            return self.lease
        }
        lease?.cancel()
    }

    /// Another daemon leads now: ``run()`` stops this one.
    func wasDeposed() {
        lock.withLock { wasDeposedFlag = true }
        deposedContinuation.yield()
    }
}
