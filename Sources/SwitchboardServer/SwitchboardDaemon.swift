import Dispatch
import Foundation
import Logging
import ServiceLifecycle
import SwitchboardApp
import SwitchboardCore
import SwitchboardTransport

/// The whole daemon, wired: the libwebsockets transport feeding the signaling hub.
///
/// This is the composition root: `switchboard serve` and the integration tests both build the
/// daemon here, so tests run exactly what operators run.
public final class SwitchboardDaemon: Service, @unchecked Sendable {
    /// The validated configuration.
    public let configuration: SwitchboardConfiguration
    /// The application hub (exposed for tests and the admin API).
    public let hub: SignalingHub
    private let transport: LWSServer
    private let logger: Logger
    private let lock = NSLock()
    private var started = false
    private var stopped = false

    /// Builds the daemon; nothing listens until ``start()``.
    public init(configuration: SwitchboardConfiguration, logger: Logger) {
        self.configuration = configuration
        self.logger = logger
        self.hub = SignalingHub(relay: configuration.relay, routes: configuration.peerJSRoutes, logger: logger)
        self.transport = LWSServer(configuration: configuration.transport, logger: logger)
    }

    /// The bound client port (after ``start()``).
    public var port: Int { transport.boundPort }

    /// The PeerJS WebSocket URL clients connect to.
    public var webSocketURL: String {
        let scheme = configuration.transport.usesTLS ? "wss" : "ws"
        let host = configuration.transport.host.contains(":") ? "[\(configuration.transport.host)]" : configuration.transport.host
        return "\(scheme)://\(host):\(port)\(configuration.peerJSRoutes.webSocketPath)"
    }

    /// Binds the listener and starts serving.
    public func start() throws {
        try lock.withLock {
            precondition(!started, "start() called twice")
            started = true
            try transport.start(sink: hub)
        }
        hub.start(transport: transport)
        logger.notice("switchboard ready", metadata: ["url": "\(webSocketURL)", "threads": "\(configuration.transport.serviceThreads)"])
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
        let clean = transport.drain(code: .goingAway, timeout: configuration.drainTimeout)
        if !clean { logger.warning("drain timeout passed with sockets still open; closing them") }
        transport.stop()
        hub.stop()
        logger.notice("stopped")
    }

    /// Runs until a graceful shutdown is requested (ServiceLifecycle), then shuts down.
    public func run() async throws {
        try start()
        try? await gracefulShutdown()
        let forceExit = SignalEscalation.armed(logger: logger)
        shutdown()
        forceExit.disarm()
    }
}
