import Configuration
import Foundation
import Logging
import SwitchboardServer
import SwitchboardTesting
import XCTest

/// Starts the real daemon in-process on 127.0.0.1 with a kernel-chosen port.
final class TestDaemon {
    private(set) var daemon: SwitchboardDaemon
    let stateDirectory: URL
    private let configuration: SwitchboardConfiguration
    private let logger: Logger
    /// The wall clock the daemon reads when the test moves time by hand (else the real one).
    let wallClock: ManualWallClock?
    private let clocks: DaemonClocks
    var port: Int { daemon.port }
    var adminPort: Int { daemon.adminPort }

    init(_ overrides: [String: ConfigContent] = [:], wallClock: ManualWallClock? = nil) throws {
        self.wallClock = wallClock
        clocks = wallClock.map { clock in DaemonClocks(wall: { clock.now() }) } ?? .system
        stateDirectory = FileManager.default.temporaryDirectory.appendingPathComponent("switchboard-test-\(UUID().uuidString)")
        var values: [String: ConfigContent] = [
            "server.host": .string("127.0.0.1"), "server.port": .int(0), "admin.port": .int(0),
            "store.directory": .string(stateDirectory.path),
        ]
        // Tests drive the admin API on loopback without a token unless they set one
        // (AdminSecurityTests covers the generated token).
        if !overrides.keys.contains(where: { $0.hasPrefix("admin.token") || $0 == "admin.auth" }) {
            values["admin.auth"] = .string("none")
        }
        values.merge(overrides) { _, new in new }
        configuration = try ConfigurationLoader.load(fileContents: nil, environment: [:], overrides: values)
        logger =
            ProcessInfo.processInfo.environment["TEST_LOGS"] == nil
            ? Logger(label: "switchboard-test", factory: { _ in SwiftLogNoOpLogHandler() })
            : Logger(label: "switchboard-test")
        daemon = SwitchboardDaemon(configuration: configuration, logger: logger, clocks: clocks)
        try daemon.start()
    }

    /// Shuts the daemon down (open sockets get 1001) and keeps its state directory.
    func stop() {
        daemon.shutdown()
    }

    /// Shuts the daemon down and starts a new one on the same state directory, as after a
    /// process restart. The ports change.
    func restart() throws {
        daemon.shutdown()
        daemon = SwitchboardDaemon(configuration: configuration, logger: logger, clocks: clocks)
        try daemon.start()
    }

    /// Moves the manual wall clock forward and runs the call hub's deadline check at once.
    func advance(by duration: Duration) {
        guard let wallClock else { preconditionFailure("advance(by:) needs a daemon started with a ManualWallClock") }
        wallClock.advance(by: duration)
        daemon.calls?.tickNow()
    }

    deinit {
        daemon.shutdown()
        try? FileManager.default.removeItem(at: stateDirectory)
    }

    /// Opens a PeerJS socket; returns it after asserting the first frame.
    func peer(id: String, token: String = "tok", key: String = "peerjs", expectOpen: Bool = true) throws -> WebSocketTestClient {
        let client = try WebSocketTestClient.connect(port: port, path: "/peerjs?key=\(key)&id=\(id)&token=\(token)")
        if expectOpen {
            let first = try client.next()
            XCTAssertEqual(first, .text(#"{"type":"OPEN"}"#), "peer \(id) did not get OPEN")
        }
        return client
    }

    func http(_ method: String, _ path: String, headers: [String: String] = [:], body: [UInt8] = []) throws -> HTTPTestClient.Response {
        try HTTPTestClient.request(method, path, port: port, headers: headers, body: body)
    }

    /// A request to the admin listener.
    func admin(_ method: String, _ path: String, token: String? = nil, headers: [String: String] = [:], body: [UInt8] = []) throws -> HTTPTestClient.Response {
        var headers = headers
        if let token { headers["Authorization"] = "Bearer \(token)" }
        return try HTTPTestClient.request(method, path, port: adminPort, headers: headers, body: body)
    }
}
