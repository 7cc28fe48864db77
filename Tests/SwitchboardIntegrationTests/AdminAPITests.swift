import SwitchboardTesting
import XCTest

/// The admin API over a real socket on its own listener, with the real store.
final class AdminAPITests: XCTestCase {
    private let token = "t0ken-for-tests"

    private func daemon() throws -> TestDaemon { try TestDaemon(["admin.token": .string(token)]) }

    private func json(_ response: HTTPTestClient.Response) -> [String: Any] { response.json as? [String: Any] ?? [:] }

    func test_healthzAnswersWithoutATokenAndTheRestNeedsOne() throws {
        let daemon = try daemon()
        XCTAssertEqual(try daemon.admin("GET", "/healthz").status, 200)
        XCTAssertEqual(try daemon.admin("GET", "/v1/stats").status, 401)
        XCTAssertEqual(try daemon.admin("GET", "/v1/stats", token: "t0ken-for-test").status, 401)
        XCTAssertEqual(try daemon.admin("GET", "/v1/stats", token: token).status, 200)
    }

    func test_theAdminRoutesAreNotServedOnTheClientPortNorPeerJSOnTheAdminPort() throws {
        let daemon = try daemon()
        XCTAssertEqual(try daemon.http("GET", "/healthz").status, 404)
        XCTAssertEqual(try daemon.admin("GET", "/peerjs/id", token: token).status, 404)
        XCTAssertThrowsError(try WebSocketTestClient.connect(port: daemon.adminPort, path: "/peerjs?key=peerjs&id=a&token=t"))
    }

    func test_unknownRoutesAre404JSONAndOversizedBodiesAre413() throws {
        let daemon = try TestDaemon(["admin.token": .string(token), "transport.max_request_body_bytes": .int(64)])
        let missing = try daemon.admin("GET", "/v1/nope", token: token)
        XCTAssertEqual(missing.status, 404)
        XCTAssertEqual((json(missing)["error"] as? [String: Any])?["code"] as? String, "not_found")
        let big = try daemon.admin("PUT", "/v1/log-level", token: token, body: Array(repeating: 32, count: 200))
        XCTAssertEqual(big.status, 413)
        XCTAssertEqual((json(big)["error"] as? [String: Any])?["code"] as? String, "payload_too_large")
    }

    func test_drainFlipsReadinessAndRefusesNewPeersButKeepsConnectedOnes() throws {
        let daemon = try daemon()
        let early = try daemon.peer(id: "early")
        XCTAssertEqual(try daemon.admin("GET", "/readyz", token: token).status, 200)
        XCTAssertEqual(try daemon.admin("POST", "/v1/drain", token: token).status, 202)
        let ready = try daemon.admin("GET", "/readyz", token: token)
        XCTAssertEqual(ready.status, 503)
        XCTAssertEqual((json(ready)["checks"] as? [String: Bool])?["draining"], true)
        let late = try WebSocketTestClient.connect(port: daemon.port, path: "/peerjs?key=peerjs&id=late&token=t")
        XCTAssertEqual(try late.awaitClose(), 1001)
        try early.send(#"{"type":"OFFER","dst":"early","payload":"still here"}"#)
        XCTAssertEqual(try early.next(), .text(#"{"type":"OFFER","src":"early","dst":"early","payload":"still here"}"#))
    }

    func test_peersAreListedAndAPeerCanBeDisconnected() throws {
        let daemon = try daemon()
        let bob = try daemon.peer(id: "bob")
        let alice = try daemon.peer(id: "alice")
        let list = json(try daemon.admin("GET", "/v1/peers", token: token))
        XCTAssertEqual((list["peers"] as? [[String: String]])?.map { $0["id"] }, ["alice", "bob"])
        XCTAssertEqual(try daemon.admin("DELETE", "/v1/peers/bob", token: token).status, 200)
        XCTAssertEqual(try bob.awaitClose(), 1000)
        XCTAssertEqual(try daemon.admin("DELETE", "/v1/peers/bob", token: token).status, 404)
        _ = alice
        _ = try daemon.peer(id: "bob", token: "another")
    }

    func test_aLogLevelChangeIsCommittedToTheAuditLogBeforeItIsAcknowledged() throws {
        let daemon = try daemon()
        let put = try daemon.admin("PUT", "/v1/log-level", token: token, body: Array(#"{"level":"debug"}"#.utf8))
        XCTAssertEqual(put.status, 200)
        let auditID = json(put)["audit_id"] as? Int
        XCTAssertNotNil(auditID)
        XCTAssertEqual(json(try daemon.admin("GET", "/v1/log-level", token: token))["level"] as? String, "debug")
        let audit = json(try daemon.admin("GET", "/v1/audit", token: token))
        let entry = (audit["entries"] as? [[String: Any]])?.first
        XCTAssertEqual(entry?["id"] as? Int, auditID)
        XCTAssertEqual(entry?["action"] as? String, "log_level.set")
        XCTAssertEqual(entry?["target"] as? String, "debug")
    }

    func test_metricsCountRelayedMessagesAndConnections() throws {
        let daemon = try daemon()
        let alice = try daemon.peer(id: "alice")
        let bob = try daemon.peer(id: "bob")
        try alice.send(#"{"type":"OFFER","dst":"bob","payload":1}"#)
        _ = try bob.next()
        let text = try daemon.admin("GET", "/metrics", token: token).text
        XCTAssertTrue(text.contains(#"switchboard_messages_relayed_total{type="OFFER"} 1"#), text)
        XCTAssertTrue(text.contains(#"switchboard_connections{kind="peerjs"} 2"#), text)
        XCTAssertTrue(text.contains("switchboard_handler_duration_seconds"), text)
    }

    func test_statsReportThePeerJSRelay() throws {
        let daemon = try daemon()
        let alice = try daemon.peer(id: "alice")
        try alice.send(#"{"type":"OFFER","dst":"ghost","payload":1}"#)
        try alice.send("garbage")
        try alice.send(#"{"type":"OFFER","dst":"alice","payload":"sync"}"#)
        _ = try alice.next()
        let stats = json(try daemon.admin("GET", "/v1/stats", token: token))
        let peerjs = stats["peerjs"] as? [String: Any]
        XCTAssertEqual(peerjs?["peers"] as? Int, 1)
        XCTAssertEqual(peerjs?["queued_messages"] as? Int, 1)
        XCTAssertEqual(peerjs?["malformed"] as? Int, 1)
        XCTAssertEqual((peerjs?["relayed"] as? [String: Int])?["OFFER"], 1)
    }
}

extension AdminAPITests {
    func test_closesAreCountedByCodeIncludingTheOnesTheTransportDecides() throws {
        let daemon = try TestDaemon(["admin.token": .string("t0ken-for-tests"), "transport.max_message_bytes": .int(1024)])
        let big = try daemon.peer(id: "big")
        try big.send(String(repeating: "x", count: 4000))
        XCTAssertEqual(try big.awaitClose(), 1009)
        let wrongKey = try WebSocketTestClient.connect(port: daemon.port, path: "/peerjs?key=nope&id=a&token=t")
        XCTAssertEqual(try wrongKey.awaitClose(), 1008)
        let text = try daemon.admin("GET", "/metrics", token: "t0ken-for-tests").text
        XCTAssertTrue(text.contains(#"switchboard_closes_total{code="1009"} 1"#), text)
        XCTAssertTrue(text.contains(#"switchboard_closes_total{code="1008"} 1"#), text)
    }
}
