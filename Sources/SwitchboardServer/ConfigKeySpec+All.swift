extension ConfigKeySpec {
    /// Every configuration key the daemon reads.
    public static let all: [ConfigKeySpec] = server + admin + auth + store + transport + peerjs + placement + operations

    static let server: [ConfigKeySpec] = [
        .init("server.host", .string(allowed: nil), .string("0.0.0.0"), "Address the client listener binds (WebSocket and PeerJS HTTP routes)."),
        .init("server.port", .int(0...65535), .int(9000), "Port of the client listener; 0 picks a free port."),
        .init("server.service_threads", .int(1...64), .int(1), "libwebsockets service threads, each with its own SO_REUSEPORT listener."),
        .init("server.tls.cert_file", .string(allowed: nil), .string(""), "PEM certificate; with key_file set the listener serves wss/https."),
        .init("server.tls.key_file", .string(allowed: nil), .string(""), "PEM private key for server.tls.cert_file."),
    ]

    static let admin: [ConfigKeySpec] = [
        .init("admin.host", .string(allowed: nil), .string("127.0.0.1"), "Address of the admin HTTP API; a non-loopback address requires a token."),
        .init("admin.port", .int(0...65535), .int(8081), "Port of the admin HTTP API; 0 picks a free port."),
        .init("admin.token", .string(allowed: nil), .string(""), secret: true, "Bearer token for the admin API (empty: no token; allowed on loopback only)."),
        .init("admin.token_file", .string(allowed: nil), .string(""), "File holding the admin token (first line); instead of admin.token."),
    ]

    static let auth: [ConfigKeySpec] = [
        .init("auth.api_key", .string(allowed: nil), .string("switchboard"), "API key id, written as the kid of the user tokens it signs."),
        .init("auth.api_secret", .string(allowed: nil), .string(""), secret: true, "API secret that signs user tokens (HS256, at least 32 bytes); empty disables tokens."),
        .init("auth.api_secret_file", .string(allowed: nil), .string(""), "File holding the API secret (first line); instead of auth.api_secret."),
        .init("auth.leeway_ms", .int(0...300_000), .int(5000), "Clock skew tolerated on a token's exp, nbf and iat."),
    ]

    static let store: [ConfigKeySpec] = [
        .init("store.directory", .string(allowed: nil), .string("./data"), "State directory; the SQLite database is switchboard.sqlite inside it."),
        .init("store.synchronous", .string(allowed: ["normal", "full"]), .string("normal"), "SQLite synchronous level in WAL mode: normal survives a process crash, full also a power loss."),
        .init("store.busy_timeout_ms", .int(0...600_000), .int(5000), "How long a write waits for a lock before failing."),
    ]

    static let transport: [ConfigKeySpec] = [
        .init("transport.max_message_bytes", .int(1024...16_777_216), .int(65536), "Largest WebSocket message after reassembly; larger closes with 1009."),
        .init("transport.outbox_bytes", .int(4096...1_073_741_824), .int(1_048_576), "Bytes waiting to be written to one socket; past that the socket is closed with 1008."),
        .init("transport.handshake_timeout_ms", .int(1000...600_000), .int(10000), "Deadline for a connection to finish its HTTP/WebSocket handshake."),
        .init("transport.ping_interval_ms", .int(1000...3_600_000), .int(30000), "Idle time before the server pings a WebSocket; silent for twice this, it is dropped."),
        .init("transport.max_request_body_bytes", .int(0...16_777_216), .int(65536), "Largest HTTP request body on either listener; larger is answered 413."),
    ]

    static let peerjs: [ConfigKeySpec] = [
        .init("peerjs.path", .string(allowed: nil), .string("/"), "Mount path; the WebSocket is at <path>peerjs."),
        .init("peerjs.key", .string(allowed: nil), .string("peerjs"), "API key clients must send."),
        .init("peerjs.expire_timeout", .int(1...3_600_000), .int(5000), "Milliseconds an undelivered message waits before the sender gets EXPIRE."),
        .init("peerjs.alive_timeout", .int(1000...86_400_000), .int(60000), "Milliseconds of silence after which a socket is closed and its id freed."),
        .init("peerjs.concurrent_limit", .int(1...10_000_000), .int(5000), "Most registered peers at once."),
        .init("peerjs.allow_discovery", .bool, .bool(false), "Whether GET <path><key>/peers lists connected ids."),
        .init("peerjs.cors_origins", .stringArray, .stringArray([]), "Allowed CORS origins; empty reflects any Origin."),
        .init("peerjs.auth", .string(allowed: ["none", "jwt"]), .string("none"), "jwt: the token parameter must be a user token signed with auth.api_secret whose user is the id."),
        .init("peerjs.queue.per_destination", .int(1...1_000_000), .int(256), "Queued messages per offline destination."),
        .init("peerjs.queue.per_sender", .int(1...1_000_000), .int(1024), "Queued messages per sender, all destinations."),
        .init("peerjs.queue.total", .int(1...100_000_000), .int(100_000), "Queued messages in total."),
        .init("peerjs.queue.total_bytes", .int(1024...17_179_869_184), .int(67_108_864), "Queued bytes in total."),
        .init("peerjs.malformed.rate", .double(0...1_000_000), .double(5), "Malformed frames tolerated per second per socket, sustained."),
        .init("peerjs.malformed.burst", .double(1...1_000_000), .double(20), "Malformed frames tolerated in a burst; past it the socket is closed with 1008."),
    ]

    static let placement: [ConfigKeySpec] = [
        .init("placement.regions_file", .string(allowed: nil), .string(""), "Region table CSV (code,name,kind,latitude,longitude); empty uses the built-in copy of config/regions.csv."),
        .init("placement.sfu_seed_file", .string(allowed: nil), .string(""), "JSON file {\"sfus\":[...]} loaded into the location table at start and on SIGHUP; empty for none."),
        .init("placement.ip_prefix_file", .string(allowed: nil), .string(""), "Optional CSV of cidr,region or cidr,latitude,longitude for locating clients by IP."),
        .init("placement.default_region", .string(allowed: nil), .string("fra"), "Where a client with no usable location is assumed to be (a region code)."),
        .init("placement.stale_after_ms", .int(500...3_600_000), .int(15000), "An SFU with no heartbeat for this long takes no calls and is marked down; its calls move."),
        .init("placement.base_rtt_ms", .double(0...1000), .double(2), "RTT added to every distance-based estimate."),
        .init("placement.rtt_per_km", .double(0...1), .double(0.01), "Estimated RTT per km of great-circle distance (ms)."),
        .init("placement.load_weight", .double(0...100), .double(1), "How strongly load raises the score: score x (1 + load_weight x utilisation^2)."),
        .init("placement.tie_seed", .int(0...Int.max), .int(0), "Seed of the deterministic tie-break order between equal scores."),
    ]

    static let operations: [ConfigKeySpec] = [
        .init("shutdown.drain_timeout_ms", .int(0...600_000), .int(10000), "On SIGTERM/SIGINT, how long to wait for sockets to close before exiting."),
        .init("log.level", .string(allowed: ["trace", "debug", "info", "notice", "warning", "error", "critical"]), .string("info"), "Log level (swift-log)."),
    ]
}

import Configuration
