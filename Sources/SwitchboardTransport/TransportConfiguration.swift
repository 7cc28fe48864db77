/// Settings of the libwebsockets transport (config sections `server` and `transport`).
public struct TransportConfiguration: Sendable, Equatable {
    /// Address to listen on.
    public var host: String
    /// Port to listen on; 0 picks a free one (see ``LWSServer/boundPort``).
    public var port: Int
    /// Service threads, each with its own lws context and SO_REUSEPORT listener.
    public var serviceThreads: Int
    /// PEM certificate and key; when both are set the listener serves wss/https.
    public var tlsCertificateFile: String?
    public var tlsPrivateKeyFile: String?
    /// Largest reassembled WebSocket message; larger closes with 1009.
    public var maxMessageBytes: Int
    /// Bytes a connection may have waiting to be written; past that it is closed (1008).
    public var outboxBytes: Int
    /// Deadline for a connection to finish its HTTP/WebSocket handshake.
    public var handshakeTimeout: Duration
    /// Idle time after which lws pings a WebSocket; a socket silent for twice this is dropped.
    public var pingInterval: Duration
    /// Largest HTTP request body; larger is answered 413.
    public var maxRequestBodyBytes: Int
    /// Paths that accept WebSocket upgrades; other paths are refused with 400.
    public var webSocketPaths: [String]
    /// listen(2) backlog.
    public var listenBacklog: Int

    public init(
        host: String = "0.0.0.0", port: Int = 9000, serviceThreads: Int = 1,
        tlsCertificateFile: String? = nil, tlsPrivateKeyFile: String? = nil,
        maxMessageBytes: Int = 65536, outboxBytes: Int = 1 << 20,
        handshakeTimeout: Duration = .seconds(10), pingInterval: Duration = .seconds(30),
        maxRequestBodyBytes: Int = 65536, webSocketPaths: [String] = ["/peerjs"], listenBacklog: Int = 1024
    ) {
        self.host = host
        self.port = port
        self.serviceThreads = serviceThreads
        self.tlsCertificateFile = tlsCertificateFile
        self.tlsPrivateKeyFile = tlsPrivateKeyFile
        self.maxMessageBytes = maxMessageBytes
        self.outboxBytes = outboxBytes
        self.handshakeTimeout = handshakeTimeout
        self.pingInterval = pingInterval
        self.maxRequestBodyBytes = maxRequestBodyBytes
        self.webSocketPaths = webSocketPaths
        self.listenBacklog = listenBacklog
    }

    /// Whether TLS is configured.
    public var usesTLS: Bool { tlsCertificateFile != nil && tlsPrivateKeyFile != nil }
}
