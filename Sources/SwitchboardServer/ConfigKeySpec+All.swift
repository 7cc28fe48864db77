import SwitchboardCore

extension ConfigKeySpec {
    /// Every configuration key the daemon reads.
    public static let all: [ConfigKeySpec] = {
        var keys: [ConfigKeySpec] = server + http + admin + auth + store
        keys += transport + peerjs + placement
        keys += connect + calls + limits + webhooks
        keys += callType(.meeting) + callType(.ringingCall)
        return keys + operations
    }()

    static let server: [ConfigKeySpec] = [
        .init("server.host", .string(allowed: nil), .string("0.0.0.0"), "Address the client listener binds (WebSocket and PeerJS HTTP routes)."),
        .init("server.port", .int(0...65535), .int(9000), "Port of the client listener; 0 picks a free port."),
        .init("server.trusted_proxies", .stringArray, .stringArray([]), "Addresses or CIDR prefixes of reverse proxies whose X-Forwarded-For names the client; limits, lockouts and logs then use that address. Others' X-Forwarded-For is ignored."),
        .init("server.service_threads", .int(1...64), .int(1), "libwebsockets service threads, each with its own SO_REUSEPORT listener."),
        .init("server.tls.cert_file", .string(allowed: nil), .string(""), "PEM certificate; with key_file set the listener serves wss/https."),
        .init("server.tls.key_file", .string(allowed: nil), .string(""), "PEM private key for server.tls.cert_file."),
    ]

    static let http: [ConfigKeySpec] = [
        .init("http.sdk_dir", .string(allowed: nil), .string("clients/js/src"), "Directory of the browser library, served at /sdk/ on the client listener (switchboard.js); empty turns it off. A directory that does not exist is left out with a notice."),
        .init("http.demo", .bool, .bool(false), "Serve the demo calling app at /demo/ (from http.demo_dir); switchboard serve --dev turns it on."),
        .init("http.demo_dir", .string(allowed: nil), .string("clients/demo"), "Directory of the demo app; must exist when http.demo is on."),
        .init("http.static", .stringArray, .stringArray([]), "More directories to serve, each \"PREFIX=DIRECTORY\" (\"/assets/=/srv/assets\"): GET and HEAD, media type by extension, ETag with Cache-Control: no-cache, no dot files, nothing outside the directory (symbolic links included)."),
    ]

    static let admin: [ConfigKeySpec] = [
        .init("admin.host", .string(allowed: nil), .string("127.0.0.1"), "Address of the admin HTTP API (loopback by default)."),
        .init("admin.port", .int(0...65535), .int(8081), "Port of the admin HTTP API; 0 picks a free port."),
        .init("admin.auth", .string(allowed: ["token", "none"]), .string("token"), "token: every route but /healthz needs the bearer token; none: no token, allowed only when admin.host is a loopback address."),
        .init("admin.token", .string(allowed: nil), .string(""), secret: true, "Bearer token for the admin API (empty: generated at first start into <store.directory>/admin.token, mode 0600; with store.kind postgres, the first leading daemon's is stored in the database and every daemon of it takes that one)."),
        .init("admin.token_file", .string(allowed: nil), .string(""), "File holding the admin token (first line); instead of admin.token."),
        .init("admin.allowed_hosts", .stringArray, .stringArray([]), "Host names the admin API answers to in Host and Origin, besides IP addresses and localhost (DNS-rebinding guard)."),
    ]

    static let auth: [ConfigKeySpec] = [
        .init("auth.api_key", .string(allowed: nil), .string("switchboard"), "API key id, written as the kid of the user tokens it signs."),
        .init("auth.api_secret", .string(allowed: nil), .string(""), secret: true, "API secret that signs user tokens (HS256, at least 32 bytes); empty disables tokens."),
        .init("auth.api_secret_file", .string(allowed: nil), .string(""), "File holding the API secret (first line); instead of auth.api_secret."),
        .init("auth.dev_tokens", .bool, .bool(false), "DEVELOPMENT ONLY: POST /dev/token on the client listener mints a token for any user asked, for clients on a loopback address only (the demo app uses it); switchboard serve --dev turns it on."),
        .init("auth.leeway_ms", .int(0...300_000), .int(5000), "Clock skew tolerated on a token's exp, nbf and iat."),
    ]

    static let store: [ConfigKeySpec] = [
        .init("store.kind", .string(allowed: ["sqlite", "postgres"]), .string("sqlite"), "Where calls, rings, sessions, SFUs, the audit log, the webhook outbox and devices live: sqlite (embedded, switchboard.sqlite in store.directory) or postgres (store.postgres_url; ADR 0012). The other store.* keys but store.directory are SQLite's."),
        .init("store.postgres_url", .string(allowed: nil), .string(""), secret: true, "With store.kind postgres: postgres://user[:password]@host[:port]/database, optionally ?sslmode=MODE&sslrootcert=FILE as libpq reads them: disable, prefer (the default: encrypted when the server offers TLS, certificate not checked), require (encrypted, not checked), verify-ca (the certificate chains to sslrootcert, else the system's roots) or verify-full (and names the host, which must be a name, not an address). Migrated at start."),
        .init("store.postgres_lease_ms", .int(1000...600_000), .int(10000), "With store.kind postgres: how long the leading daemon's lead of the database lasts unrenewed (renewed every third of it). Every daemon on the database but the leader stands by and tries to take the lead every third of it: a standby takes over from a dead leader within about 1.33 times this. A leader whose lead was taken while it was frozen or cut off exits 75."),
        .init("store.postgres_calls", .string(allowed: ["leader", "spread"]), .string("leader"), "With store.kind postgres: which daemons run calls. leader (the default): the leading daemon runs every call, and the others relay their clients' call protocol sockets to it. spread: every daemon runs the call protocol for its own sockets and the calls they create or take over, requests for a call another daemon runs go to that daemon, and the leader keeps only what runs once (webhooks, Janus rooms, SFU polls); needs store.postgres_standby relay. Every daemon of one database must run the same: a daemon refuses to start while live nodes run the other."),
        .init("store.postgres_standby", .string(allowed: ["relay", "idle"]), .string("relay"), "With store.kind postgres: what a daemon that does not lead does. relay (the default): it binds its listeners and relays its clients' sockets and requests to the leading daemon over the database (LISTEN/NOTIFY), so every daemon behind the balancer serves; its own GET /healthz, /readyz and /metrics answer for itself. idle: it binds nothing until it leads."),
        .init("store.directory", .string(allowed: nil), .string("./data"), "State directory (the admin token, the SFU room key, the lock held while a daemon runs); with store.kind sqlite, the SQLite database is switchboard.sqlite inside it. With store.kind postgres, one per daemon; the SFU room key and a generated admin token are then the database's, shared by its daemons."),
        .init("store.synchronous", .string(allowed: ["normal", "full"]), .string("normal"), "SQLite synchronous level in WAL mode: normal survives a process crash, full also a power loss."),
        .init("store.busy_timeout_ms", .int(0...600_000), .int(5000), "How long a write waits for a lock before failing."),
        .init("store.checkpoint_interval_ms", .int(0...60_000), .int(1000), "How often a connection of its own checkpoints the WAL so commits never do; 0 leaves checkpoints to SQLite inside commits. With the batch log the WAL only grows at folds, and a checkpoint's fsyncs stall other writes: 1,000 ms (30 suits `store.fold_interval_ms` 0)."),
        .init("store.fold_interval_ms", .int(0...60_000), .int(2000), "How often committed call batches move from the append-only batch log into the tables (ADR 0010); 0 writes each batch into the tables in its own transaction. A longer interval writes fewer pages per join (a fold dirties about one page per user and per new call it touches) and holds more batches in memory and in the log."),
    ]

    static let transport: [ConfigKeySpec] = [
        .init("transport.max_message_bytes", .int(1024...16_777_216), .int(1_048_576), "Largest WebSocket message after reassembly; larger closes with 1009."),
        .init("transport.outbox_bytes", .int(4096...1_073_741_824), .int(2_097_152), "Bytes waiting to be written to one socket; past that the socket is closed with 1008. At least max_message_bytes + 4096."),
        .init("transport.partial_message_bytes", .int(1024...17_179_869_184), .int(67_108_864), "Bytes of partly received messages held over all sockets; a socket whose next fragment would go over is closed with 1013. At least max_message_bytes."),
        .init("transport.inbound_bytes", .int(4096...1_073_741_824), .int(1_048_576), "Bytes of messages read from one socket and not yet handled; past that the socket is not read (TCP pushes back) until half is handled."),
        .init("transport.handshake_timeout_ms", .int(1000...600_000), .int(10000), "Deadline for any connection to finish its HTTP request or WebSocket handshake, for a request body, and for keep-alive idle time; past it the connection is closed."),
        .init("transport.ping_interval_ms", .int(1000...3_600_000), .int(30000), "Silence before the server pings a WebSocket (any frame from the client counts); silent for as long again, it is dropped."),
        .init("transport.max_connections_per_address", .int(1...1_000_000), .int(2000), "Connections of any kind (WebSocket, HTTP, not yet known) one remote address may hold on one listener; more are closed at accept."),
        .init("transport.max_pending_per_address", .int(1...100_000), .int(32), "Connections from one remote address that have not finished a request or handshake; more are closed at accept."),
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
        .init("peerjs.queue.per_sender_bytes", .int(1024...17_179_869_184), .int(4_194_304), "Queued bytes per sender, all destinations: a sender's share of total_bytes, so a few senders cannot fill it."),
        .init("peerjs.malformed.rate", .double(0...1_000_000), .double(5), "Malformed frames tolerated per second per socket, sustained."),
        .init("peerjs.messages.rate", .double(0.1...1_000_000), .double(5000), "Messages one PeerJS socket may send per second, sustained; more are dropped."),
        .init("peerjs.messages.burst", .double(1...1_000_000), .double(10000), "Messages one PeerJS socket may send in a burst; beyond it they are dropped, and a socket that also uses up a burst of drops (refilled at the same rate) is closed (1008)."),
        .init("peerjs.malformed.burst", .double(1...1_000_000), .double(20), "Malformed frames tolerated in a burst; past it the socket is closed with 1008."),
    ]

    static let placement: [ConfigKeySpec] = [
        .init("placement.regions_file", .string(allowed: nil), .string(""), "Region table CSV (code,name,kind,latitude,longitude); empty uses the built-in copy of config/regions.csv."),
        .init("placement.sfu_seed_file", .string(allowed: nil), .string(""), "JSON file {\"sfus\":[...]} loaded into the location table at start and on SIGHUP; empty for none."),
        .init("placement.ip_prefix_file", .string(allowed: nil), .string(""), "Optional CSV of cidr,region or cidr,latitude,longitude for locating clients by IP."),
        .init("placement.default_region", .string(allowed: nil), .string("fra"), "Where a client with no usable location is assumed to be (a region code)."),
        .init("placement.stale_after_ms", .int(500...3_600_000), .int(15000), "An SFU with no heartbeat for this long takes no calls and is marked down; its calls move."),
        .init("placement.poll_interval_ms", .int(100...600_000), .int(1000), "How often Switchboard polls each pulled SFU (kind janus) for health and load."),
        .init("placement.poll_timeout_ms", .int(50...60_000), .int(1000), "How long one poll of a pulled SFU may take before it counts as no answer. This and poll_interval_ms are capped at a quarter of stale_after_ms."),
        .init("placement.base_rtt_ms", .double(0...1000), .double(2), "RTT added to every distance-based estimate."),
        .init("placement.rtt_per_km", .double(0...1), .double(0.01), "Estimated RTT per km of great-circle distance (ms)."),
        .init("placement.load_weight", .double(0...100), .double(1), "How strongly load raises the score: score x (1 + load_weight x utilisation^2)."),
        .init("placement.tie_seed", .int(0...Int.max), .int(0), "Seed of the deterministic tie-break order between equal scores."),
    ]

    static let connect: [ConfigKeySpec] = [
        .init("connect.path", .string(allowed: nil), .string("/v1/connect"), "WebSocket path of the call protocol, on the client listener; empty turns it off."),
        .init("connect.auth_timeout_ms", .int(100...600_000), .int(5000), "A socket must authenticate within this long or is closed (4001)."),
        .init("connect.token_expiring_ms", .int(0...86_400_000), .int(60000), "connection.token_expiring goes out this long before the token expires."),
        .init("connect.resume_window_ms", .int(0...3_600_000), .int(30000), "A dropped connection may resume this long; then its sessions leave (connection_lost)."),
        .init("connect.replay_buffer", .int(0...100_000), .int(256), "Events kept per connection for replay on resume."),
        .init("connect.idle_timeout_ms", .int(1000...3_600_000), .int(60000), "A socket that sends nothing, not even ping, for this long is closed (4003)."),
    ]

    static let webhooks: [ConfigKeySpec] = [
        .init("webhooks.endpoints", .stringArray, .stringArray([]), "Webhook endpoints, each \"NAME=URL\" (\"billing=https://billing.example.com/switchboard\"): NAME is 1-64 of A-Z a-z 0-9 _ -, URL is http or https. Empty: no webhooks (nothing is written to the outbox)."),
        .init("webhooks.secrets", .stringArray, .stringArray([]), secret: true, "Each endpoint's signing secret, \"NAME=whsec_<base64>\" (at least 24 bytes of key); one per endpoint, here or in webhooks.secret_files."),
        .init("webhooks.secret_files", .stringArray, .stringArray([]), "Files holding endpoints' secrets (first line), \"NAME=PATH\"; instead of webhooks.secrets."),
        .init("webhooks.events", .stringArray, .stringArray([]), "Event filters, \"NAME=call.ring,call.missed\"; an endpoint without one takes every event (docs/webhooks.md lists them)."),
        .init("webhooks.timeout_ms", .int(100...120_000), .int(10000), "Deadline of one delivery attempt, from connecting to the answer's status and headers; past it the attempt failed and is retried."),
        .init("webhooks.retry_horizon_ms", .int(1000...2_592_000_000), .int(86_400_000), "How long a message is retried (exponential backoff with jitter) before it is dead-lettered."),
        .init("webhooks.max_backoff_ms", .int(1000...86_400_000), .int(600_000), "Longest wait between two attempts of one message."),
        .init("webhooks.max_in_flight", .int(1...1024), .int(16), "Attempts in flight at once per endpoint, each on a different call (one call's events go one at a time, in order)."),
        .init("webhooks.retention_ms", .int(0...31_536_000_000), .int(604_800_000), "Delivered and dead deliveries older than this are deleted with their messages (checked every minute, oldest first); pending ones never are. 0 keeps them for good."),
        .init("webhooks.worker_process", .bool, .bool(true), "Make delivery attempts in a worker process the daemon starts (switchboard webhook-worker) whose threads all run under Linux's SCHED_IDLE policy, so HTTP work takes only CPU calls leave idle; false makes them on a thread of the daemon, at its priority."),
        .init("webhooks.niceness", .int(0...19), .int(10), "Nice value of the clean-up of old deliveries (every minute), where the thread's value can be put back afterwards (as root or with RLIMIT_NICE); 0 runs it at the daemon's priority. Delivery itself runs at the daemon's priority."),
        .init("webhooks.rotation_grace_ms", .int(0...2_592_000_000), .int(86_400_000), "After POST /v1/webhooks/endpoints/{name}/rotate_secret, how long the previous secret keeps signing too (unless the request names its own grace)."),
    ]

    static let limits: [ConfigKeySpec] = [
        .init("limits.connections_total", .int(1...1_000_000), .int(50000), "Most open WebSockets (PeerJS and call protocol); more are closed with 1013."),
        .init("limits.connections_per_ip", .int(1...1_000_000), .int(1000), "Most open WebSockets from one remote address; more are closed with 1013."),
        .init("limits.connect_rate_per_ip", .double(0.1...100_000), .double(100), "New WebSockets one address may open per second (token bucket rate)."),
        .init("limits.connect_burst_per_ip", .double(1...100_000), .double(500), "New WebSockets one address may open in a burst (token bucket size)."),
        .init("limits.connections_per_user", .int(1...10_000), .int(16), "Most call-protocol connections one user may hold at once; more are refused (rate_limited, 1013)."),
        .init("limits.messages_per_second", .double(0.1...100_000), .double(50), "Call-protocol requests one socket may send per second (token bucket rate)."),
        .init("limits.message_burst", .double(1...100_000), .double(100), "Call-protocol requests one socket may send in a burst; beyond it they get rate_limited, and a socket that also uses up a burst of refusals (refilled at the same rate) is closed (1008)."),
        .init("limits.auth_failures_per_minute_per_ip", .double(0.1...100_000), .double(30), "Failed authentications one address (or one user at it, for a genuine token) may make per minute (token bucket rate)."),
        .init("limits.auth_failure_burst_per_ip", .double(1...100_000), .double(10), "Failed authentications one address (or one user at it, for a genuine token) may make in a burst; then its sockets are refused."),
    ]

    static let calls: [ConfigKeySpec] = [
        .init("calls.max_custom_bytes", .int(0...1_048_576), .int(5120), "Largest custom object (call data, call.send_event), in bytes."),
        .init("calls.max_members", .int(1...10_000), .int(100), "Largest number of members of one call."),
        .init("calls.devices_per_user", .int(1...1000), .int(10), "Push devices one user may register (device.register); one more is refused with too_many_devices."),
        .init("calls.ring_rate_per_minute", .double(0...10_000), .double(20), "Rings one user may receive per minute (token bucket rate)."),
        .init("calls.ring_burst", .double(1...10_000), .double(10), "Rings one user may receive in a burst (token bucket size)."),
        .init("calls.creates_per_minute_per_user", .double(0...100_000), .double(60), "Calls one user may create per minute (token bucket rate); past it call.get_or_create and creating joins are rate_limited. Admin tokens are exempt."),
        .init("calls.create_burst_per_user", .double(1...100_000), .double(30), "Calls one user may create in a burst (token bucket size)."),
        .init("calls.invites_per_minute_per_user", .double(0...100_000), .double(120), "Members one user may add to existing calls per minute (call.invite; token bucket rate); past it rate_limited. Admin tokens are exempt."),
        .init("calls.invite_burst_per_user", .double(1...100_000), .double(60), "Members one user may add to existing calls in a burst (token bucket size)."),
        .init("calls.dominant_speaker_hold_ms", .int(0...60_000), .int(1500), "How long a louder speaker must lead before taking over from one still speaking."),
    ]

    /// The keys of one built-in call type, with that type's defaults.
    static func callType(_ preset: CallTypeSettings) -> [ConfigKeySpec] {
        let prefix = "call_types.\(preset.name)."
        return [
            .init(prefix + "members_only", .bool, .bool(preset.membersOnly), "Only members (creator, members given at creation, invitees) may join."),
            .init(prefix + "ringing", .bool, .bool(preset.ringing), "Calls of this type may ring (ring: true at creation)."),
            .init(prefix + "max_participants", .int(1...10_000), .int(preset.maxParticipants), "Largest number of participant sessions at once (call_full)."),
            .init(prefix + "incoming_timeout_ms", .int(1000...600_000), .int(Int(preset.incomingTimeout.milliseconds)), "A callee who does not answer by then is missed."),
            .init(prefix + "auto_cancel_timeout_ms", .int(1000...600_000), .int(Int(preset.autoCancelTimeout.milliseconds)), "If nobody accepted by then, the call ends (no_answer)."),
            .init(prefix + "busy_policy", .string(allowed: ["reject", "ring"]), .string(preset.busyPolicy.rawValue), "A callee in another active call: reject (busy) or ring anyway."),
            .init(prefix + "end_when_initiator_leaves", .bool, .bool(preset.endWhenInitiatorLeaves), "The call ends (initiator_left) when its creator leaves."),
            .init(prefix + "empty_timeout_ms", .int(1000...86_400_000), .int(Int(preset.emptyTimeout.milliseconds)), "A call with no participants and no ring ends (empty) after this long."),
            .init(prefix + "reopen", .bool, .bool(preset.reopen), "A join may reopen an ended call as a new session."),
        ]
    }

    static let operations: [ConfigKeySpec] = [
        .init("testing.echo_path", .string(allowed: nil), .string(""), "TEST ONLY: a WebSocket path that echoes every message (Autobahn conformance runs); empty is off."),
        .init("shutdown.drain_timeout_ms", .int(0...600_000), .int(10000), "On SIGTERM/SIGINT, how long to wait for sockets to close before exiting."),
        .init("log.level", .string(allowed: ["trace", "debug", "info", "notice", "warning", "error", "critical"]), .string("info"), "Log level (swift-log)."),
    ]
}

import Configuration
