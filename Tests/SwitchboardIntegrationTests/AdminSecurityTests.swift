import Configuration
import Foundation
import Logging
import SwitchboardServer
import SwitchboardTesting
import XCTest

/// The admin API secure by default, over real sockets: a token generated into the state
/// directory when none is configured, and requests shaped like a web page's refused.
final class AdminSecurityTests: XCTestCase {
    func test_withNoTokenConfiguredOneIsGeneratedPrivateKeptAcrossRestartsAndRequired() throws {
        let daemon = try TestDaemon(["admin.auth": .string("token")])
        let file = daemon.stateDirectory.appendingPathComponent("admin.token")
        let token = try XCTUnwrap(String(contentsOf: file, encoding: .utf8).split(separator: "\n").first.map(String.init))
        XCTAssertEqual(token.count, 64)
        let mode = try XCTUnwrap(FileManager.default.attributesOfItem(atPath: file.path)[.posixPermissions] as? NSNumber)
        XCTAssertEqual(mode.intValue & 0o777, 0o600)

        XCTAssertEqual(try daemon.admin("GET", "/healthz").status, 200)
        XCTAssertEqual(try daemon.admin("GET", "/v1/stats").status, 401)
        XCTAssertEqual(try daemon.admin("GET", "/v1/stats", token: token).status, 200)

        try daemon.restart()
        XCTAssertEqual(try daemon.admin("GET", "/v1/stats", token: token).status, 200, "the same token after a restart")
    }

    func test_aForeignHostOrOriginAndAFormPostAreRefusedEvenWithoutTokenAuth() throws {
        let daemon = try TestDaemon()  // admin.auth none on loopback
        let forged = try daemon.admin("POST", "/v1/drain", headers: ["Host": "attacker.example:8081"])
        XCTAssertEqual(forged.status, 403)
        XCTAssertTrue(forged.text.contains(#""code":"forbidden""#), forged.text)
        let crossSite = try daemon.admin("POST", "/v1/drain", headers: ["Origin": "http://attacker.example"])
        XCTAssertEqual(crossSite.status, 403)
        let form = try daemon.admin(
            "POST", "/v1/tokens", headers: ["Content-Type": "text/plain"], body: Array(#"{"user_id":"mallory","role":"admin"}"#.utf8))
        XCTAssertEqual(form.status, 415)
        XCTAssertTrue(form.text.contains(#""code":"unsupported_media_type""#), form.text)
        let ready = try daemon.admin("GET", "/readyz")
        XCTAssertEqual(ready.status, 200, "nothing above drained the daemon: \(ready.text)")
    }

    func test_aSecondDaemonOnTheSameStateDirectoryRefusesToStartNamingTheHolder() throws {
        let first = try TestDaemon()
        let configuration = try ConfigurationLoader.load(
            fileContents: nil, environment: [:],
            overrides: [
                "server.host": .string("127.0.0.1"), "server.port": .int(0), "admin.port": .int(0), "admin.auth": .string("none"),
                "store.directory": .string(first.stateDirectory.path),
            ])
        let second = SwitchboardDaemon(configuration: configuration, logger: .init(label: "second", factory: { _ in SwiftLogNoOpLogHandler() }))
        XCTAssertThrowsError(try second.start()) { error in
            let text = "\(error)"
            XCTAssertTrue(text.contains(first.stateDirectory.path), text)
            XCTAssertTrue(text.contains("pid \(ProcessInfo.processInfo.processIdentifier)"), text)
        }
        XCTAssertEqual(try first.admin("GET", "/readyz").status, 200)
    }

    func test_aSecondDaemonOnAPortInUseRefusesToStart() throws {
        let first = try TestDaemon()
        let other = FileManager.default.temporaryDirectory.appendingPathComponent("switchboard-test-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: other) }
        let configuration = try ConfigurationLoader.load(
            fileContents: nil, environment: [:],
            overrides: [
                "server.host": .string("127.0.0.1"), "server.port": .int(first.port), "admin.port": .int(0), "admin.auth": .string("none"),
                "store.directory": .string(other.path),
            ])
        let second = SwitchboardDaemon(configuration: configuration, logger: .init(label: "second", factory: { _ in SwiftLogNoOpLogHandler() }))
        XCTAssertThrowsError(try second.start()) { error in
            XCTAssertTrue("\(error)".contains("already in use"), "\(error)")
        }
        _ = try first.peer(id: "still-served")
    }
}

/// Behind a trusted proxy the per-address limits apply to the address it forwards.
final class TrustedProxyTests: XCTestCase {
    func test_limitsCountTheForwardedAddressOnlyFromATrustedProxy() throws {
        let behind = try TestDaemon(["server.trusted_proxies": .stringArray(["127.0.0.1"]), "limits.connections_per_ip": .int(1)])
        let first = try WebSocketTestClient.connect(port: behind.port, path: "/peerjs?key=peerjs&id=a&token=t", headers: ["X-Forwarded-For": "203.0.113.1"])
        XCTAssertEqual(try first.next(), .text(#"{"type":"OPEN"}"#))
        let second = try WebSocketTestClient.connect(port: behind.port, path: "/peerjs?key=peerjs&id=b&token=t", headers: ["X-Forwarded-For": "203.0.113.2"])
        XCTAssertEqual(try second.next(), .text(#"{"type":"OPEN"}"#), "another client behind the same proxy")
        let again = try WebSocketTestClient.connect(port: behind.port, path: "/peerjs?key=peerjs&id=c&token=t", headers: ["X-Forwarded-For": "203.0.113.1"])
        XCTAssertEqual(try again.awaitClose(), 1013, "the same client twice")

        let direct = try TestDaemon(["limits.connections_per_ip": .int(1)])
        let one = try WebSocketTestClient.connect(port: direct.port, path: "/peerjs?key=peerjs&id=a&token=t", headers: ["X-Forwarded-For": "203.0.113.1"])
        XCTAssertEqual(try one.next(), .text(#"{"type":"OPEN"}"#))
        let spoofed = try WebSocketTestClient.connect(port: direct.port, path: "/peerjs?key=peerjs&id=b&token=t", headers: ["X-Forwarded-For": "203.0.113.2"])
        XCTAssertEqual(try spoofed.awaitClose(), 1013, "an untrusted peer's X-Forwarded-For is ignored")
    }
}
