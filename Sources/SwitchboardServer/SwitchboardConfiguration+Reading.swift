import Logging
import SwitchboardCore
import SwitchboardTransport

extension SwitchboardConfiguration {
    /// Reads and validates every key. Each key is read here and nowhere else.
    init(reading values: ConfigValues) throws {
        let routes = PeerJSRoutes(mountPath: try values.string("peerjs.path"), corsOrigins: try values.strings("peerjs.cors_origins"))
        let cert = try values.string("server.tls.cert_file")
        let key = try values.string("server.tls.key_file")
        guard cert.isEmpty == key.isEmpty else {
            throw SwitchboardError(.invalidConfiguration, "server.tls.cert_file and server.tls.key_file must be set together")
        }
        transport = TransportConfiguration(
            host: try values.string("server.host"),
            port: try values.int("server.port"),
            serviceThreads: try values.int("server.service_threads"),
            tlsCertificateFile: cert.isEmpty ? nil : cert,
            tlsPrivateKeyFile: key.isEmpty ? nil : key,
            maxMessageBytes: try values.int("transport.max_message_bytes"),
            outboxBytes: try values.int("transport.outbox_bytes"),
            handshakeTimeout: try values.milliseconds("transport.handshake_timeout_ms"),
            pingInterval: try values.milliseconds("transport.ping_interval_ms"),
            maxRequestBodyBytes: try values.int("transport.max_request_body_bytes"),
            webSocketPaths: [routes.webSocketPath]
        )
        relay = try Self.relay(values)
        peerJSRoutes = routes
        drainTimeout = try values.milliseconds("shutdown.drain_timeout_ms")
        logLevel = Logger.Level(rawValue: try values.string("log.level")) ?? .info
    }

    private static func relay(_ values: ConfigValues) throws -> RelayConfiguration {
        let key = try values.string("peerjs.key")
        guard !key.isEmpty else { throw SwitchboardError(.invalidConfiguration, "peerjs.key: must not be empty") }
        return RelayConfiguration(
            key: key,
            concurrentLimit: try values.int("peerjs.concurrent_limit"),
            expireTimeout: try values.milliseconds("peerjs.expire_timeout"),
            aliveTimeout: try values.milliseconds("peerjs.alive_timeout"),
            allowDiscovery: try values.bool("peerjs.allow_discovery"),
            maxQueuedPerDestination: try values.int("peerjs.queue.per_destination"),
            maxQueuedPerSender: try values.int("peerjs.queue.per_sender"),
            maxQueuedTotal: try values.int("peerjs.queue.total"),
            maxQueuedBytes: try values.int("peerjs.queue.total_bytes"),
            malformedRate: try values.double("peerjs.malformed.rate"),
            malformedBurst: try values.double("peerjs.malformed.burst")
        )
    }
}
