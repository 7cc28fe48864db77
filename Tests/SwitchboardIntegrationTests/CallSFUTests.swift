import Foundation
import SwitchboardTesting
import XCTest

/// Calls get their SFU from the location table; when it dies, participants hear
/// `call.sfu_changed`; the call metrics count what happened.
final class CallSFUTests: XCTestCase {
    private let adminToken = "admin-token-for-call-sfu-tests"
    private let secret = "call-sfu-tests-secret-0123456789abcdef"

    private func daemon() throws -> TestDaemon {
        try TestDaemon([
            "admin.token": .string(adminToken), "auth.api_secret": .string(secret), "placement.stale_after_ms": .int(1200),
        ])
    }

    private func register(_ daemon: TestDaemon, id: String, region: String) throws {
        let body = #"{"id":"\#(id)","url":"wss://\#(id).example.net/ws","region":"\#(region)","capacity":100,"secret":"secret-of-\#(id)-0123"}"#
        XCTAssertEqual(try daemon.admin("POST", "/v1/sfus", token: adminToken, body: Array(body.utf8)).status, 201)
        XCTAssertEqual(try daemon.admin("POST", "/v1/sfus/\(id)/heartbeat", token: "secret-of-\(id)-0123", body: Array(#"{"load":0}"#.utf8)).status, 200)
    }

    /// Opens `/v1/connect` for `user`, authenticates with the first frame, checks `connection.ok`.
    private func connect(_ daemon: TestDaemon, _ user: String) throws -> WebSocketTestClient {
        let response = try daemon.admin("POST", "/v1/tokens", token: adminToken, body: Array(#"{"user_id":"\#(user)","ttl_seconds":600}"#.utf8))
        XCTAssertEqual(response.status, 201, response.text)
        let token = try XCTUnwrap((response.json as? [String: Any])?["token"] as? String)
        let client = try WebSocketTestClient.connect(port: daemon.port, path: "/v1/connect")
        try client.send(#"{"type":"auth","token":"\#(token)"}"#)
        let ok = try client.nextJSON()
        XCTAssertEqual(ok["type"] as? String, "connection.ok")
        XCTAssertEqual((ok["data"] as? [String: Any])?["user_id"] as? String, user)
        return client
    }

    /// The next frame that is not an event of another type.
    private func next(_ client: WebSocketTestClient, type: String, timeout: Duration = .seconds(5)) throws -> [String: Any] {
        let deadline = ContinuousClock.now + timeout
        while true {
            let frame = try client.nextJSON(timeout: deadline - ContinuousClock.now)
            if frame["type"] as? String == type { return frame }
        }
    }

    func test_aJoinGetsTheNearestSFUAndParticipantsHearWhenItMoves() throws {
        let daemon = try daemon()
        try register(daemon, id: "sfu-fra", region: "fra")
        try register(daemon, id: "sfu-syd", region: "syd")
        let alice = try connect(daemon, "alice")
        let bob = try connect(daemon, "bob")
        try alice.send(#"{"id":1,"type":"call.join","data":{"type":"default","id":"standup","create":true,"location":{"region":"fra"}}}"#)
        let joined = try next(alice, type: "response")
        XCTAssertEqual((joined["data"] as? [String: Any])?["role"] as? String, "initiator")
        XCTAssertEqual(((joined["data"] as? [String: Any])?["sfu"] as? [String: Any])?["id"] as? String, "sfu-fra")
        XCTAssertEqual(((joined["data"] as? [String: Any])?["sfu"] as? [String: Any])?["url"] as? String, "wss://sfu-fra.example.net/ws")
        try bob.send(#"{"id":1,"type":"call.join","data":{"type":"default","id":"standup","location":{"latitude":48.1,"longitude":11.6}}}"#)
        let bobJoined = try next(bob, type: "response")
        XCTAssertEqual(((bobJoined["data"] as? [String: Any])?["sfu"] as? [String: Any])?["id"] as? String, "sfu-fra", "the placement is sticky")

        // Sydney keeps beating; Frankfurt has sent its last heartbeat.
        let sydney = DispatchSource.makeTimerSource(queue: .global())
        sydney.schedule(deadline: .now(), repeating: .milliseconds(300))
        sydney.setEventHandler { _ = try? daemon.admin("POST", "/v1/sfus/sfu-syd/heartbeat", token: "secret-of-sfu-syd-0123", body: Array(#"{"load":1}"#.utf8)) }
        sydney.resume()
        defer { sydney.cancel() }
        for client in [alice, bob] {
            let changed = try next(client, type: "call.sfu_changed", timeout: .seconds(10))
            XCTAssertEqual(changed["call_cid"] as? String, "default:standup")
            XCTAssertEqual(((changed["data"] as? [String: Any])?["sfu"] as? [String: Any])?["id"] as? String, "sfu-syd")
        }

        let metrics = try daemon.admin("GET", "/metrics", token: adminToken).text
        XCTAssertTrue(metrics.contains("switchboard_calls_live 1"), metrics)
        XCTAssertTrue(metrics.contains("switchboard_call_joins_total 2"), metrics)
        XCTAssertTrue(metrics.contains(#"switchboard_connections{kind="call"} 2"#), metrics)
    }

    func test_whenNoSFUCanTakeTheCallTheJoinFailsWithNoSFUAvailableAndNothingIsCreated() throws {
        let daemon = try daemon()
        try register(daemon, id: "sfu-only", region: "iad")
        XCTAssertEqual(try daemon.admin("POST", "/v1/sfus/sfu-only/drain", token: adminToken).status, 200)
        let alice = try connect(daemon, "alice")
        try alice.send(#"{"id":"j","type":"call.join","data":{"type":"default","id":"nowhere","create":true}}"#)
        let refused = try next(alice, type: "error")
        XCTAssertEqual(refused["id"] as? String, "j")
        XCTAssertEqual((refused["error"] as? [String: Any])?["code"] as? String, "no_sfu_available")
        try alice.send(#"{"id":"g","type":"call.get","data":{"type":"default","id":"nowhere"}}"#)
        let missing = try next(alice, type: "error")
        XCTAssertEqual((missing["error"] as? [String: Any])?["code"] as? String, "call_not_found", "a failed join leaves no call behind")
        let metrics = try daemon.admin("GET", "/metrics", token: adminToken).text
        XCTAssertTrue(metrics.contains("switchboard_calls_live 0"), metrics)
        XCTAssertTrue(metrics.contains("switchboard_placement_failures_total{"), metrics)
    }

    func test_authFailuresAreCountedByReason() throws {
        let daemon = try daemon()
        let client = try WebSocketTestClient.connect(port: daemon.port, path: "/v1/connect")
        try client.send(#"{"type":"auth","token":"not-a-jwt"}"#)
        let refused = try client.nextJSON()
        XCTAssertEqual((refused["error"] as? [String: Any])?["code"] as? String, "token_invalid")
        XCTAssertEqual(try client.awaitClose(), 4001)
        let metrics = try daemon.admin("GET", "/metrics", token: adminToken).text
        XCTAssertTrue(metrics.contains(#"switchboard_auth_failures_total{reason="token_invalid"} 1"#), metrics)
    }
}
