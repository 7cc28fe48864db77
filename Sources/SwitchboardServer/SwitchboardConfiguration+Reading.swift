import Foundation
import Logging
import SwitchboardAdmin
import SwitchboardAuth
import SwitchboardCore
import SwitchboardPostgres
import SwitchboardStore
import SwitchboardTransport

extension SwitchboardConfiguration {
    /// Room the outbox keeps beyond the largest message, for a relayed message's envelope.
    static let envelopeAllowance = 4096

    /// Reads and validates every key. Each key is read here and nowhere else.
    init(reading values: ConfigValues) throws {
        let routes = PeerJSRoutes(mountPath: try values.string("peerjs.path"), corsOrigins: try values.strings("peerjs.cors_origins"))
        let cert = try values.string("server.tls.cert_file")
        let key = try values.string("server.tls.key_file")
        guard cert.isEmpty == key.isEmpty else {
            throw SwitchboardError(.invalidConfiguration, "server.tls.cert_file and server.tls.key_file must be set together")
        }
        for (name, path) in [("server.tls.cert_file", cert), ("server.tls.key_file", key)] where !path.isEmpty {
            guard FileManager.default.isReadableFile(atPath: path) else {
                throw SwitchboardError(.invalidConfiguration, "\(name): cannot read \(path)")
            }
        }
        let maxBody = try values.int("transport.max_request_body_bytes")
        let connect = try values.string("connect.path")
        guard connect.isEmpty || (connect.hasPrefix("/") && connect != routes.webSocketPath) else {
            throw SwitchboardError(.invalidConfiguration, "connect.path: must start with / and differ from the PeerJS path")
        }
        connectPath = connect.isEmpty ? nil : connect
        let echo = try values.string("testing.echo_path")
        guard echo.isEmpty || (echo.hasPrefix("/") && echo != routes.webSocketPath && echo != connect) else {
            throw SwitchboardError(.invalidConfiguration, "testing.echo_path: must start with / and differ from the other WebSocket paths")
        }
        echoPath = echo.isEmpty ? nil : echo
        let client = ListenerConfiguration(
            role: .client, host: try values.string("server.host"), port: try values.int("server.port"),
            tlsCertificateFile: cert.isEmpty ? nil : cert, tlsPrivateKeyFile: key.isEmpty ? nil : key,
            webSocketPaths: [routes.webSocketPath] + (connect.isEmpty ? [] : [connect]) + (echo.isEmpty ? [] : [echo]), maxRequestBodyBytes: maxBody, onEveryServiceThread: true)
        let adminHost = try values.string("admin.host")
        let adminListener = ListenerConfiguration(
            role: .admin, host: adminHost, port: try values.int("admin.port"),
            maxRequestBodyBytes: maxBody, onEveryServiceThread: false)
        let maxMessage = try values.int("transport.max_message_bytes")
        let outbox = try values.int("transport.outbox_bytes")
        // A relayed message gains its envelope (src, dst, type): the outbox must hold the
        // largest message with room to spare, or every large message closes its receiver.
        guard outbox >= maxMessage + Self.envelopeAllowance else {
            throw SwitchboardError(
                .invalidConfiguration,
                "transport.outbox_bytes: must be at least transport.max_message_bytes + \(Self.envelopeAllowance) (\(maxMessage + Self.envelopeAllowance))")
        }
        let partial = try values.int("transport.partial_message_bytes")
        guard partial >= maxMessage else {
            throw SwitchboardError(.invalidConfiguration, "transport.partial_message_bytes: must be at least transport.max_message_bytes (\(maxMessage))")
        }
        transport = TransportConfiguration(
            listeners: [client, adminListener],
            serviceThreads: try values.int("server.service_threads"),
            maxMessageBytes: maxMessage,
            outboxBytes: outbox,
            inboundBytes: try values.int("transport.inbound_bytes"),
            partialMessageBytes: partial,
            handshakeTimeout: try values.milliseconds("transport.handshake_timeout_ms"),
            pingInterval: try values.milliseconds("transport.ping_interval_ms"),
            maxConnectionsPerAddress: try values.int("transport.max_connections_per_address"),
            maxPendingPerAddress: try values.int("transport.max_pending_per_address"),
            trustedProxies: try TrustedProxies(parsing: try values.strings("server.trusted_proxies"), key: "server.trusted_proxies")
        )
        admin = try Self.admin(values, host: adminHost)
        store = StoreConfiguration(
            directory: try values.string("store.directory"),
            synchronous: StoreConfiguration.Synchronous(rawValue: try values.string("store.synchronous")) ?? .normal,
            busyTimeout: try values.milliseconds("store.busy_timeout_ms"),
            checkpointInterval: try values.milliseconds("store.checkpoint_interval_ms"),
            foldInterval: try values.milliseconds("store.fold_interval_ms"))
        postgres = try Self.postgres(values)
        postgresLease = try values.milliseconds("store.postgres_lease_ms")
        postgresRelays = try values.string("store.postgres_standby") == "relay"
        postgresSpreadsCalls = try values.string("store.postgres_calls") == "spread"
        if postgresSpreadsCalls && !(postgres != nil && postgresRelays) {
            throw SwitchboardError(.invalidConfiguration, "store.postgres_calls: spread needs store.kind postgres and store.postgres_standby relay")
        }
        auth = try Self.auth(values)
        relay = try Self.relay(values)
        if try values.string("peerjs.auth") == "jwt" {
            guard auth.apiSecret != nil else {
                throw SwitchboardError(.invalidConfiguration, "peerjs.auth: jwt needs auth.api_secret or auth.api_secret_file")
            }
            relay.requireSignedIDs = true
        }
        placement = try PlacementConfiguration(reading: values)
        calls = try Self.calls(values)
        webhooks = try WebhookSettings(reading: values)
        calls.webhooks = webhooks.routing
        limits = ConnectionLimits(
            total: try values.int("limits.connections_total"), perAddress: try values.int("limits.connections_per_ip"),
            connectRate: try values.double("limits.connect_rate_per_ip"), connectBurst: try values.double("limits.connect_burst_per_ip"))
        peerJSRoutes = routes
        http = try HTTPConfiguration(
            reading: values,
            reserved: client.webSocketPaths + ["\(routes.mountPath)\(relay.key)/id", "\(routes.mountPath)\(relay.key)/peers"])
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
            maxQueuedBytesPerSender: try values.int("peerjs.queue.per_sender_bytes"),
            malformedRate: try values.double("peerjs.malformed.rate"),
            malformedBurst: try values.double("peerjs.malformed.burst"),
            messageRate: try values.double("peerjs.messages.rate"),
            messageBurst: try values.double("peerjs.messages.burst")
        )
    }

    private static func calls(_ values: ConfigValues) throws -> CallConfiguration {
        var types: [String: CallTypeSettings] = [:]
        for preset in [CallTypeSettings.meeting, .ringingCall] {
            let prefix = "call_types.\(preset.name)."
            types[preset.name] = CallTypeSettings(
                name: preset.name, membersOnly: try values.bool(prefix + "members_only"), ringing: try values.bool(prefix + "ringing"),
                maxParticipants: try values.int(prefix + "max_participants"), incomingTimeout: try values.milliseconds(prefix + "incoming_timeout_ms"),
                autoCancelTimeout: try values.milliseconds(prefix + "auto_cancel_timeout_ms"),
                busyPolicy: CallTypeSettings.BusyPolicy(rawValue: try values.string(prefix + "busy_policy")) ?? preset.busyPolicy,
                endWhenInitiatorLeaves: try values.bool(prefix + "end_when_initiator_leaves"), emptyTimeout: try values.milliseconds(prefix + "empty_timeout_ms"),
                reopen: try values.bool(prefix + "reopen"))
        }
        return CallConfiguration(
            types: types, authTimeout: try values.milliseconds("connect.auth_timeout_ms"), tokenExpiringLead: try values.milliseconds("connect.token_expiring_ms"),
            resumeWindow: try values.milliseconds("connect.resume_window_ms"), replayBuffer: try values.int("connect.replay_buffer"),
            idleTimeout: try values.milliseconds("connect.idle_timeout_ms"), maxCustomBytes: try values.int("calls.max_custom_bytes"),
            ringRatePerMinute: try values.double("calls.ring_rate_per_minute"), ringBurst: try values.double("calls.ring_burst"),
            dominantSpeakerHold: try values.milliseconds("calls.dominant_speaker_hold_ms"), maxMembers: try values.int("calls.max_members"),
            connectionsPerUser: try values.int("limits.connections_per_user"), messageRate: try values.double("limits.messages_per_second"),
            messageBurst: try values.double("limits.message_burst"), authFailuresPerMinute: try values.double("limits.auth_failures_per_minute_per_ip"),
            authFailureBurst: try values.double("limits.auth_failure_burst_per_ip"),
            createsPerMinute: try values.double("calls.creates_per_minute_per_user"), createBurst: try values.double("calls.create_burst_per_user"),
            invitesPerMinute: try values.double("calls.invites_per_minute_per_user"), inviteBurst: try values.double("calls.invite_burst_per_user"),
            devicesPerUser: try values.int("calls.devices_per_user"))
    }

    private static func auth(_ values: ConfigValues) throws -> AuthConfiguration {
        let secret = try secretValue(values, inline: "auth.api_secret", file: "auth.api_secret_file")
        if let secret, secret.utf8.count < JWTTokenService.minimumSecretBytes {
            throw SwitchboardError(.invalidConfiguration, "auth.api_secret: must be at least \(JWTTokenService.minimumSecretBytes) bytes")
        }
        return AuthConfiguration(apiKey: try values.string("auth.api_key"), apiSecret: secret, leeway: try values.milliseconds("auth.leeway_ms"))
    }

    /// A secret from its inline key or its `_file` key (first line), never both; `nil` when unset.
    static func secretValue(_ values: ConfigValues, inline: String, file: String) throws -> String? {
        let text = try values.string(inline)
        let path = try values.string(file)
        guard text.isEmpty || path.isEmpty else { throw SwitchboardError(.invalidConfiguration, "\(inline) and \(file): set only one") }
        guard !path.isEmpty else { return text.isEmpty ? nil : text }
        guard let contents = try? String(contentsOfFile: path, encoding: .utf8) else {
            throw SwitchboardError(.invalidConfiguration, "\(file): cannot read \(path)")
        }
        let first = contents.split(whereSeparator: \.isNewline).first.map(String.init)?.trimmingCharacters(in: .whitespaces) ?? ""
        guard !first.isEmpty else { throw SwitchboardError(.invalidConfiguration, "\(file): \(path) is empty") }
        return first
    }

    /// `store.kind` and, for `postgres`, the database `store.postgres_url` names; `nil` for SQLite.
    private static func postgres(_ values: ConfigValues) throws -> PostgresStore.Configuration? {
        guard try values.string("store.kind") == "postgres" else { return nil }
        let url = try values.string("store.postgres_url")
        guard !url.isEmpty else {
            throw SwitchboardError(.invalidConfiguration, "store.postgres_url: store.kind postgres needs postgres://user[:password]@host[:port]/database")
        }
        do {
            return try PostgresStore.Configuration(url: url)
        } catch {
            throw SwitchboardError(.invalidConfiguration, "store.postgres_url: \(error.message)")
        }
    }

    /// `admin.auth`, the token from `admin.token` or `admin.token_file` (the daemon generates one
    /// when none is set), and the extra host names. `none` is allowed only on a loopback address,
    /// checked as an address: a name such as `127.0.0.1.nip.io` is not one.
    private static func admin(_ values: ConfigValues, host: String) throws -> AdminConfiguration {
        let auth = AdminConfiguration.Auth(rawValue: try values.string("admin.auth")) ?? .token
        let token = try secretValue(values, inline: "admin.token", file: "admin.token_file")
        if auth == .none, !AdminRequestPolicy.isLoopbackAddress(host) {
            throw SwitchboardError(
                .invalidConfiguration, "admin.auth: none is allowed only when admin.host is a loopback address such as 127.0.0.1 or ::1 (got \(host))")
        }
        var allowed: [String] = []
        for name in try values.strings("admin.allowed_hosts") {
            guard !name.isEmpty, name.allSatisfy({ $0.isLetter || $0.isNumber || $0 == "." || $0 == "-" }) else {
                throw SwitchboardError(.invalidConfiguration, "admin.allowed_hosts: \"\(name)\" is not a host name")
            }
            allowed.append(name)
        }
        return AdminConfiguration(auth: auth, token: auth == .none ? nil : token, allowedHosts: allowed)
    }
}
