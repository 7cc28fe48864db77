// swift-tools-version:6.0
import PackageDescription

/// `scripts/fuzz` builds with SWITCHBOARD_FUZZ=1: Switchboard's own modules get libFuzzer's
/// coverage and AddressSanitizer, the dependencies stay as the test build compiled them, so the
/// fuzz build reuses them instead of recompiling every package with sanitizers (docs/fuzzing.md).
let fuzzing = Context.environment["SWITCHBOARD_FUZZ"] == "1"

let strictSettings: [SwiftSetting] = [
    .enableUpcomingFeature("ExistentialAny"),
] + (fuzzing ? [.unsafeFlags(["-sanitize=fuzzer,address"]), .define("SWITCHBOARD_FUZZING")] : [])

let package = Package(
    name: "switchboard",
    // One list for every target: the daemon's targets use Synchronization's Mutex (macOS 15);
    // SwitchboardKit itself needs Observation (macOS 14, iOS 17).
    platforms: [.macOS(.v15), .iOS(.v18)],
    products: [
        .executable(name: "switchboard", targets: ["switchboard"]),
        // The Swift client library for the call protocol (docs/swift-client.md).
        .library(name: "SwitchboardKit", targets: ["SwitchboardKit"]),
        .executable(name: "switchboard-phone", targets: ["switchboard-phone"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.8.2"),
        .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
        .package(url: "https://github.com/apple/swift-configuration", from: "1.4.0"),
        .package(url: "https://github.com/apple/swift-collections", from: "1.6.0"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle", from: "2.13.0"),
        .package(url: "https://github.com/apple/swift-metrics", from: "2.13.0"),
        .package(url: "https://github.com/swift-server/swift-prometheus", from: "2.4.1"),
        .package(url: "https://github.com/groue/GRDB.swift", from: "7.10.0"),
        .package(url: "https://github.com/vapor/jwt-kit", from: "5.8.0"),
        .package(url: "https://github.com/apple/swift-nio", from: "2.101.2"),
        .package(url: "https://github.com/apple/swift-crypto", from: "4.5.2"),
        .package(url: "https://github.com/swift-server/async-http-client", from: "1.37.0"),
        .package(url: "https://github.com/hummingbird-project/swift-websocket", from: "1.6.2"),
        .package(url: "https://github.com/vapor/postgres-nio", from: "1.33.2"),
        .package(url: "https://github.com/apple/swift-nio-ssl", from: "2.37.6"),
    ],
    targets: [
        // The C boundary: Debian's libwebsockets 4.1 and libev.
        .systemLibrary(
            name: "CLibWebSockets",
            pkgConfig: "libwebsockets",
            providers: [.apt(["libwebsockets-dev", "libev-dev"])]
        ),
        // POSIX socket helpers in C, so the Swift side handles no sockaddr.
        .target(name: "CSwitchboardShims"),
        // Rules the daemon and its client libraries share (the participants' default order).
        .target(name: "SwitchboardProtocol", swiftSettings: strictSettings),
        // Pure core: ids, wire codecs, relay state machine. No I/O, no clock, no threads.
        .target(
            name: "SwitchboardCore",
            dependencies: [
                "SwitchboardProtocol",
                .product(name: "DequeModule", package: "swift-collections"),
                .product(name: "HeapModule", package: "swift-collections"),
                // HMAC-SHA256 for the SFU room keys (pure computation, no I/O).
                .product(name: "Crypto", package: "swift-crypto"),
            ],
            swiftSettings: strictSettings
        ),
        // libwebsockets adapter: the only module with unsafe code.
        .target(
            name: "SwitchboardTransport",
            dependencies: [
                "CLibWebSockets",
                "CSwitchboardShims",
                "SwitchboardCore",
                .product(name: "DequeModule", package: "swift-collections"),
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: strictSettings
        ),
        // SQLite through GRDB: migrations and the store ports' implementations.
        .target(
            name: "SwitchboardStore",
            dependencies: ["SwitchboardCore", .product(name: "GRDB", package: "GRDB.swift")],
            swiftSettings: strictSettings
        ),
        // The store on PostgreSQL through postgres-nio, for several daemons as one service (#17,
        // ADR 0012). Its own migrations; the same contract suites as the SQLite store.
        .target(
            name: "SwitchboardPostgres",
            dependencies: [
                "SwitchboardCore", .product(name: "PostgresNIO", package: "postgres-nio"), .product(name: "Logging", package: "swift-log"),
                // TLS to the database (store.postgres_url's sslmode).
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
            ],
            swiftSettings: strictSettings
        ),
        // Signed user tokens (HS256 JWTs) through jwt-kit.
        .target(
            name: "SwitchboardAuth",
            dependencies: ["SwitchboardCore", .product(name: "JWTKit", package: "jwt-kit")],
            swiftSettings: strictSettings
        ),
        // The admin HTTP API as plain functions from a request value to a response value.
        .target(
            name: "SwitchboardAdmin",
            dependencies: ["SwitchboardCore"],
            swiftSettings: strictSettings
        ),
        // SFU adapters: the Janus admin API client and the poller that pulls SFUs' health and
        // load, over async-http-client. Runs on Swift concurrency, off the signaling and call queues.
        .target(
            name: "SwitchboardSFU",
            dependencies: [
                "SwitchboardCore",
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Metrics", package: "swift-metrics"),
            ],
            swiftSettings: strictSettings
        ),
        // Webhook delivery over async-http-client: each attempt's signed POST (Standard Webhooks);
        // what to send when is SwitchboardCore's WebhookScheduler.
        .target(
            name: "SwitchboardWebhooks",
            dependencies: [
                "CSwitchboardShims",
                "SwitchboardCore",
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: strictSettings
        ),
        // Application layer: the serial queue that owns live state and runs the core.
        .target(
            name: "SwitchboardApp",
            dependencies: [
                "CSwitchboardShims",
                "SwitchboardCore",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Metrics", package: "swift-metrics"),
            ],
            swiftSettings: strictSettings
        ),
        // Composition root: configuration, wiring, lifecycle.
        .target(
            name: "SwitchboardServer",
            dependencies: [
                "SwitchboardCore",
                "SwitchboardApp",
                "SwitchboardTransport",
                "SwitchboardStore",
                "SwitchboardPostgres",
                "SwitchboardAdmin",
                "SwitchboardAuth",
                "SwitchboardSFU",
                "SwitchboardWebhooks",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Configuration", package: "swift-configuration"),
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "Prometheus", package: "swift-prometheus"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ],
            swiftSettings: strictSettings
        ),
        .executableTarget(
            name: "switchboard",
            dependencies: [
                "SwitchboardServer", "SwitchboardAuth", "SwitchboardCore", "SwitchboardStore", "SwitchboardPostgres", "SwitchboardTransport",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: strictSettings
        ),
        // The Swift client library: signalling only (media is the app's), over swift-websocket's WSClient.
        .target(
            name: "SwitchboardKit",
            dependencies: [
                "SwitchboardProtocol",
                .product(name: "WSClient", package: "swift-websocket"),
                .product(name: "NIOWebSocket", package: "swift-nio"),
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: strictSettings
        ),
        // `switchboard-phone`: ring, answer and meet from a terminal, on SwitchboardKit.
        .executableTarget(
            name: "switchboard-phone",
            dependencies: [
                "SwitchboardKit", .product(name: "ArgumentParser", package: "swift-argument-parser"), .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: strictSettings
        ),
        // docs/swift-client.md's quick start, compiled (a test checks the document shows this file).
        .executableTarget(
            name: "switchboard-kit-quickstart",
            dependencies: ["SwitchboardKit"],
            path: "Examples/QuickStart",
            swiftSettings: strictSettings
        ),
        // `scripts/bench client`: SwitchboardKit's cost per event and memory per call.
        .executableTarget(
            name: "switchboard-client-bench",
            dependencies: ["SwitchboardKit", "CSwitchboardShims"],
            path: "bench/client",
            swiftSettings: strictSettings
        ),
        // `scripts/bench placement`: the placement engine on generated worlds.
        .executableTarget(
            name: "switchboard-placement-bench",
            dependencies: ["SwitchboardCore"],
            path: "bench/placement",
            swiftSettings: strictSettings
        ),
        // `scripts/bench bus`: messages between nodes over LISTEN/NOTIFY, against a round trip.
        .executableTarget(
            name: "switchboard-bus-bench",
            dependencies: ["SwitchboardPostgres", "SwitchboardCore", .product(name: "PostgresNIO", package: "postgres-nio")],
            path: "bench/bus",
            swiftSettings: strictSettings
        ),
        // `scripts/bench tunnel`: a relayed batch written and read, tunnel JSON against Foundation's.
        .executableTarget(
            name: "switchboard-tunnel-bench",
            dependencies: ["SwitchboardCore"],
            path: "bench/tunnel",
            swiftSettings: strictSettings
        ),
        // `scripts/bench gateway`: the call protocol's pure core on one node, per request.
        .executableTarget(
            name: "switchboard-gateway-bench",
            dependencies: ["SwitchboardCore"],
            path: "bench/gateway",
            swiftSettings: strictSettings
        ),
        // Test support: manual clock, in-memory transport twin, WebSocket test client.
        .target(
            name: "SwitchboardTesting",
            dependencies: [
                "SwitchboardCore", "SwitchboardApp", "SwitchboardTransport", "SwitchboardAdmin",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Metrics", package: "swift-metrics"),
            ],
            swiftSettings: strictSettings
        ),
        .testTarget(
            name: "SwitchboardCoreTests",
            dependencies: ["SwitchboardCore", "SwitchboardProtocol", "SwitchboardTesting"],
            swiftSettings: strictSettings
        ),
        .testTarget(
            name: "SwitchboardAppTests",
            dependencies: [
                "SwitchboardApp", "SwitchboardCore", "SwitchboardTesting",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "MetricsTestKit", package: "swift-metrics"),
            ],
            swiftSettings: strictSettings
        ),
        .testTarget(
            name: "SwitchboardSFUTests",
            dependencies: ["SwitchboardSFU", "SwitchboardCore", "SwitchboardTesting"],
            exclude: ["Fixtures"],
            swiftSettings: strictSettings
        ),
        .testTarget(
            name: "SwitchboardWebhooksTests",
            dependencies: [
                "SwitchboardWebhooks", "SwitchboardCore", "SwitchboardTesting", "SwitchboardApp", "CSwitchboardShims",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
            ],
            swiftSettings: strictSettings
        ),
        .testTarget(
            name: "SwitchboardAuthTests",
            dependencies: ["SwitchboardAuth", "SwitchboardCore", .product(name: "JWTKit", package: "jwt-kit")],
            swiftSettings: strictSettings
        ),
        .testTarget(
            name: "SwitchboardStoreTests",
            dependencies: [
                "SwitchboardStore", "SwitchboardPostgres", "SwitchboardCore", "SwitchboardTesting", .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "PostgresNIO", package: "postgres-nio"),
            ],
            swiftSettings: strictSettings
        ),
        .testTarget(
            name: "SwitchboardAdminTests",
            dependencies: ["SwitchboardAdmin", "SwitchboardCore", "SwitchboardTesting"],
            swiftSettings: strictSettings
        ),
        .testTarget(
            name: "SwitchboardServerTests",
            dependencies: [
                "SwitchboardServer", "SwitchboardCore", "SwitchboardTransport", "SwitchboardTesting",
                .product(name: "Configuration", package: "swift-configuration"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "MetricsTestKit", package: "swift-metrics"),
            ],
            swiftSettings: strictSettings
        ),
        // SwitchboardKit's state logic, fed frames recorded from the daemon (the browser
        // library's tests replay the same recordings: clients/js/test/fixtures).
        .testTarget(
            name: "SwitchboardKitTests",
            dependencies: ["SwitchboardKit", "SwitchboardProtocol", .product(name: "NIOPosix", package: "swift-nio")],
            swiftSettings: strictSettings
        ),
        .testTarget(
            name: "SwitchboardIntegrationTests",
            dependencies: [
                "SwitchboardServer", "SwitchboardApp", "SwitchboardCore", "SwitchboardTesting", "SwitchboardAuth", "SwitchboardKit",
                .product(name: "Configuration", package: "swift-configuration"),
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: strictSettings
        ),
    ]
)

// MARK: - Fuzzing (scripts/fuzz, docs/fuzzing.md)
//
// One libFuzzer executable per parser, all calling the per-input logic in SwitchboardFuzzing,
// which the regression tests (SwitchboardFuzzTests) replay too. Built by scripts/fuzz with
// SWITCHBOARD_FUZZ=1 (above); in a plain build the executables replay files.
let fuzzTargets: [(product: String, directory: String)] = [
    ("fuzz-peerjs-frame", "FuzzPeerJSFrame"),
    ("fuzz-call-frame", "FuzzCallFrame"),
    ("fuzz-admin-body", "FuzzAdminBody"),
    ("fuzz-token", "FuzzToken"),
    ("fuzz-config", "FuzzConfig"),
]
package.targets += [
    .target(name: "CFuzzerDriver", path: "Fuzz/CFuzzerDriver"),
    .target(
        name: "SwitchboardFuzzing",
        dependencies: [
            "CFuzzerDriver", "SwitchboardCore", "SwitchboardApp", "SwitchboardAdmin", "SwitchboardAuth", "SwitchboardServer", "SwitchboardStore",
            "SwitchboardTesting",
            .product(name: "JWTKit", package: "jwt-kit"),
            .product(name: "Logging", package: "swift-log"),
        ],
        path: "Fuzz/SwitchboardFuzzing",
        swiftSettings: strictSettings
    ),
    .testTarget(
        name: "SwitchboardFuzzTests",
        dependencies: ["SwitchboardFuzzing"],
        path: "Fuzz/RegressionTests",
        swiftSettings: strictSettings
    ),
]
package.targets += fuzzTargets.map { target in
    // In the fuzz build `main` runs libFuzzer's driver; in a plain build it replays files.
    .executableTarget(
        name: target.product, dependencies: ["SwitchboardFuzzing"], path: "Fuzz/\(target.directory)", swiftSettings: strictSettings,
        linkerSettings: fuzzing ? [.unsafeFlags(["-sanitize=fuzzer,address"])] : [])
}
package.products += fuzzTargets.map { .executable(name: $0.product, targets: [$0.product]) }
