import SwitchboardCore

/// One listening socket: where it binds, whether it speaks TLS, what it accepts.
public struct ListenerConfiguration: Sendable, Equatable {
    /// What the listener is for; carried on every request it receives.
    public var role: ListenerRole
    /// Address to listen on.
    public var host: String
    /// Port to listen on; 0 picks a free one (see ``LWSServer/boundPort(of:)``).
    public var port: Int
    /// PEM certificate and key; when both are set the listener serves wss/https.
    public var tlsCertificateFile: String?
    public var tlsPrivateKeyFile: String?
    /// Paths that accept WebSocket upgrades; other paths are refused with 400.
    public var webSocketPaths: [String]
    /// Largest HTTP request body; larger is answered 413.
    public var maxRequestBodyBytes: Int
    /// Served by every service thread (SO_REUSEPORT) rather than by the first one only.
    public var onEveryServiceThread: Bool

    public init(
        role: ListenerRole, host: String, port: Int, tlsCertificateFile: String? = nil, tlsPrivateKeyFile: String? = nil,
        webSocketPaths: [String] = [], maxRequestBodyBytes: Int = 65536, onEveryServiceThread: Bool = true
    ) {
        self.role = role
        self.host = host
        self.port = port
        self.tlsCertificateFile = tlsCertificateFile
        self.tlsPrivateKeyFile = tlsPrivateKeyFile
        self.webSocketPaths = webSocketPaths
        self.maxRequestBodyBytes = maxRequestBodyBytes
        self.onEveryServiceThread = onEveryServiceThread
    }

    /// Whether TLS is configured.
    public var usesTLS: Bool { tlsCertificateFile != nil && tlsPrivateKeyFile != nil }
}

/// Settings of the libwebsockets transport (config sections `server`, `admin` and `transport`).
public struct TransportConfiguration: Sendable, Equatable {
    /// The listeners; the first with role `.client` is the client port.
    public var listeners: [ListenerConfiguration]
    /// Service threads, each with its own lws context.
    public var serviceThreads: Int
    /// Largest reassembled WebSocket message; larger closes with 1009.
    public var maxMessageBytes: Int
    /// Bytes a connection may have waiting to be written; past that it is closed (1008).
    public var outboxBytes: Int
    /// Bytes of messages read from one socket and not yet handled by the application; past that
    /// the socket is not read (TCP pushes back on its sender) until the backlog halves.
    public var inboundBytes: Int
    /// Bytes of partly received messages held over all sockets; a socket whose next fragment
    /// would go over is closed with 1013.
    public var partialMessageBytes: Int
    /// Deadline for a connection to finish its HTTP/WebSocket handshake.
    public var handshakeTimeout: Duration
    /// Silence after which a WebSocket is pinged; silent for as long again, it is dropped.
    public var pingInterval: Duration
    /// listen(2) backlog.
    public var listenBacklog: Int
    /// Connections of any kind one address may hold on one listener; more are closed at accept.
    public var maxConnectionsPerAddress: Int
    /// Connections from one address that have not finished a request or upgrade; more are
    /// closed at accept (kept well below lws's pool of 256 header buffers).
    public var maxPendingPerAddress: Int
    /// Peers whose `X-Forwarded-For` names the client (`server.trusted_proxies`); they are not
    /// held to the per-address caps themselves.
    public var trustedProxies: TrustedProxies

    public init(
        listeners: [ListenerConfiguration], serviceThreads: Int = 1, maxMessageBytes: Int = 1 << 20,
        outboxBytes: Int = 2 << 20, inboundBytes: Int = 1 << 20, partialMessageBytes: Int = 64 << 20, handshakeTimeout: Duration = .seconds(10), pingInterval: Duration = .seconds(30),
        listenBacklog: Int = 1024, maxConnectionsPerAddress: Int = 2000, maxPendingPerAddress: Int = 32,
        trustedProxies: TrustedProxies = TrustedProxies()
    ) {
        self.trustedProxies = trustedProxies
        self.maxConnectionsPerAddress = maxConnectionsPerAddress
        self.maxPendingPerAddress = maxPendingPerAddress
        self.listeners = listeners
        self.serviceThreads = serviceThreads
        self.maxMessageBytes = maxMessageBytes
        self.outboxBytes = outboxBytes
        self.inboundBytes = inboundBytes
        self.partialMessageBytes = partialMessageBytes
        self.handshakeTimeout = handshakeTimeout
        self.pingInterval = pingInterval
        self.listenBacklog = listenBacklog
    }

    /// The listener with `role`, if configured.
    public func listener(_ role: ListenerRole) -> ListenerConfiguration? {
        listeners.first { $0.role == role }
    }
}
