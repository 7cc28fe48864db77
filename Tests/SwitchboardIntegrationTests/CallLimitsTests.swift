import Foundation
import SwitchboardAuth
import SwitchboardCore
import SwitchboardTesting
import XCTest

/// Pipelined requests behind the auth frame, and the call protocol's limits: connections per
/// user, requests per socket, failed authentications per address, connections per address.
final class CallLimitsTests: XCTestCase {
    private func error(_ frame: [String: Any]) -> String? { (frame["error"] as? [String: Any])?["code"] as? String }

    /// The next frame whose `type` is `type`, skipping others.
    private func next(_ client: WebSocketTestClient, _ type: String) throws -> [String: Any] {
        while true {
            let frame = try client.nextJSON()
            if frame["type"] as? String == type { return frame }
        }
    }

    func test_requestsSentRightBehindTheAuthFrameRunOnceItPasses() throws {
        let daemon = try TestDaemon.calls()
        let token = try daemon.mintToken(user: "alice")
        let client = try WebSocketTestClient.connect(port: daemon.port, path: "/v1/connect")
        try client.send(#"{"type":"auth","token":"\#(token)"}"#)
        try client.send(#"{"id":1,"type":"call.join","data":{"type":"default","id":"fast","create":true}}"#)
        try client.send(#"{"id":2,"type":"ping"}"#)
        XCTAssertEqual(try client.nextJSON()["type"] as? String, "connection.ok")
        let joined = try client.nextJSON()
        XCTAssertEqual(joined["id"] as? Int, 1)
        XCTAssertEqual(joined["type"] as? String, "response")
        XCTAssertEqual(try client.nextJSON()["type"] as? String, "pong")
    }

    func test_aUserHoldsAtMostConnectionsPerUserSockets() throws {
        let daemon = try TestDaemon.calls(["limits.connections_per_user": .int(2)])
        let first = try daemon.callClient("carol")
        let second = try daemon.callClient("carol")
        let token = try daemon.mintToken(user: "carol")
        let third = try WebSocketTestClient.connect(port: daemon.port, path: "/v1/connect?token=\(token)")
        XCTAssertEqual(error(try third.nextJSON()), "rate_limited")
        XCTAssertEqual(try third.awaitClose(), 1013)
        XCTAssertEqual(first.userID, "carol")
        XCTAssertEqual(second.userID, "carol")
        let other = try daemon.callClient("dave")
        XCTAssertEqual(other.userID, "dave", "other users are not affected")
    }

    func test_aSocketSendingFasterThanItsRateGetsRateLimitedThenIsClosedIfItKeepsOn() throws {
        let daemon = try TestDaemon.calls(["limits.messages_per_second": .double(1), "limits.message_burst": .double(5)])
        let token = try daemon.mintToken(user: "eve")
        let client = try WebSocketTestClient.connect(port: daemon.port, path: "/v1/connect?token=\(token)")
        XCTAssertEqual(try client.nextJSON()["type"] as? String, "connection.ok")
        for id in 1...20 { try client.send(#"{"id":\#(id),"type":"call.get","data":{"type":"default","id":"x"}}"#) }
        var codes: [String] = []
        while true {
            let frame = try client.next()
            guard case .text(let text) = frame, let object = try JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any] else {
                if case .close(let code, _) = frame { XCTAssertEqual(code, 1008, "a flood past a whole burst of refusals is closed") }
                break
            }
            codes.append(error(object) ?? "ok")
        }
        XCTAssertEqual(Array(codes.prefix(5)), Array(repeating: "call_not_found", count: 5), "the burst is served")
        XCTAssertEqual(codes.dropFirst(5).first, "rate_limited")
        XCTAssertEqual(codes.count, 10, "5 served, 5 refused, then the socket is closed")
        let metrics = try daemon.admin("GET", "/metrics", token: TestDaemon.callAdminToken).text
        XCTAssertTrue(metrics.contains(#"switchboard_rate_limited_total{kind="call_request"} 6"#), metrics)
        let bystander = try daemon.callClient("frank")
        XCTAssertEqual(bystander.userID, "frank")
    }

    func test_anAddressThatFailsAuthenticationTooOftenIsRefusedForAWhile() throws {
        let daemon = try TestDaemon.calls(["limits.auth_failure_burst_per_ip": .double(3), "limits.auth_failures_per_minute_per_ip": .double(1)])
        for _ in 0..<3 {
            let forged = try WebSocketTestClient.connect(port: daemon.port, path: "/v1/connect?token=forged")
            XCTAssertEqual(error(try forged.nextJSON()), "token_invalid")
            XCTAssertEqual(try forged.awaitClose(), 4001)
        }
        let token = try daemon.mintToken(user: "grace")
        let blocked = try WebSocketTestClient.connect(port: daemon.port, path: "/v1/connect?token=\(token)")
        XCTAssertEqual(error(try blocked.nextJSON()), "rate_limited", "even a good token waits until the address cools down")
        XCTAssertEqual(try blocked.awaitClose(), 1013)
        // Call-protocol closes are counted with the others.
        let metrics = try daemon.admin("GET", "/metrics", token: TestDaemon.callAdminToken).text
        XCTAssertTrue(metrics.contains(#"switchboard_closes_total{code="4001"} 3"#), metrics)
        XCTAssertTrue(metrics.contains(#"switchboard_closes_total{code="1013"} 1"#), metrics)
    }

    /// A genuine token that keeps failing (expired) locks out its user at the address, not the
    /// other users behind it (a shared NAT or office).
    func test_aUserWhoseGenuineTokenKeepsFailingIsLockedOutAloneAtTheAddress() async throws {
        let daemon = try TestDaemon.calls(["limits.auth_failure_burst_per_ip": .double(3), "limits.auth_failures_per_minute_per_ip": .double(1)])
        let anHourAgo = await JWTTokenService(configuration: AuthConfiguration(apiSecret: TestDaemon.callSecret), now: { Date().addingTimeInterval(-3600) })
        let (stale, _) = try await XCTUnwrap(anHourAgo).issue(TokenRequest(userID: "mallory", ttl: .seconds(60)))
        for _ in 0..<3 {
            let refused = try WebSocketTestClient.connect(port: daemon.port, path: "/v1/connect?token=\(stale)")
            XCTAssertEqual(error(try refused.nextJSON()), "token_expired")
            XCTAssertEqual(try refused.awaitClose(), 4001)
        }
        let mallory = try WebSocketTestClient.connect(port: daemon.port, path: "/v1/connect?token=\(try daemon.mintToken(user: "mallory"))")
        XCTAssertEqual(error(try mallory.nextJSON()), "rate_limited", "mallory waits until the lockout cools down")
        XCTAssertEqual(try mallory.awaitClose(), 1013)
        let grace = try WebSocketTestClient.connect(port: daemon.port, path: "/v1/connect?token=\(try daemon.mintToken(user: "grace"))")
        XCTAssertEqual(try next(grace, "connection.ok")["type"] as? String, "connection.ok", "grace, on the same address, gets in")
    }

    func test_connectionsPerAddressAreCappedForBothProtocols() throws {
        let daemon = try TestDaemon.calls(["limits.connections_per_ip": .int(3)])
        let held = try (0..<3).map { try daemon.peer(id: "p\($0)") }
        let refused = try WebSocketTestClient.connect(port: daemon.port, path: "/v1/connect")
        XCTAssertEqual(try refused.awaitClose(), 1013)
        let metrics = try daemon.admin("GET", "/metrics", token: TestDaemon.callAdminToken).text
        XCTAssertTrue(metrics.contains(#"switchboard_connections_refused_total{reason="connections_per_ip"} 1"#), metrics)
        try held[0].close()
        XCTAssertEqual(try held[0].awaitClose(), 1000)
        let deadline = ContinuousClock.now + .seconds(5)
        var admitted = false
        while !admitted, ContinuousClock.now < deadline {
            let again = try WebSocketTestClient.connect(port: daemon.port, path: "/peerjs?key=peerjs&id=late&token=t")
            if case .text(let text) = try again.next() { admitted = text.contains("OPEN") }
        }
        XCTAssertTrue(admitted, "a freed slot can be used again")
    }
}
