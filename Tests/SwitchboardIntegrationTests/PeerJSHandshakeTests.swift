import SwitchboardTesting
import XCTest

final class PeerJSHandshakeTests: XCTestCase {
    func test_aPeerWithAllParametersGetsOpen() throws {
        let daemon = try TestDaemon()
        _ = try daemon.peer(id: "alice")
    }

    func test_aMissingParameterIsAnsweredWithErrorThenClose() throws {
        let daemon = try TestDaemon()
        for path in ["/peerjs?key=peerjs&id=a", "/peerjs?key=peerjs&token=t", "/peerjs?id=a&token=t", "/peerjs?key=peerjs&id=&token=t"] {
            let client = try WebSocketTestClient.connect(port: daemon.port, path: path)
            XCTAssertEqual(try client.next(), .text(#"{"type":"ERROR","payload":{"msg":"No id, token, or key supplied to websocket server"}}"#), path)
            XCTAssertNotNil(try client.awaitClose(), path)
        }
    }

    func test_theKeyIsCheckedAfterTheParameters() throws {
        let daemon = try TestDaemon()
        let client = try WebSocketTestClient.connect(port: daemon.port, path: "/peerjs?key=wrong&id=a&token=t")
        XCTAssertEqual(try client.next(), .text(#"{"type":"ERROR","payload":{"msg":"Invalid key provided"}}"#))
        XCTAssertEqual(try client.awaitClose(), 1008)
    }

    func test_anIdHeldUnderAnotherTokenIsTaken() throws {
        let daemon = try TestDaemon()
        let holder = try daemon.peer(id: "bob", token: "one")
        let intruder = try WebSocketTestClient.connect(port: daemon.port, path: "/peerjs?key=peerjs&id=bob&token=two")
        XCTAssertEqual(try intruder.next(), .text(#"{"type":"ID-TAKEN","payload":{"msg":"ID is taken"}}"#))
        XCTAssertNotNil(try intruder.awaitClose())
        _ = holder
    }

    func test_theConcurrentLimitRefusesNewIdsButNotTakeovers() throws {
        let daemon = try TestDaemon(["peerjs.concurrent_limit": .int(1)])
        let first = try daemon.peer(id: "one", token: "t")
        let second = try WebSocketTestClient.connect(port: daemon.port, path: "/peerjs?key=peerjs&id=two&token=t")
        XCTAssertEqual(try second.next(), .text(#"{"type":"ERROR","payload":{"msg":"Server has reached its concurrent user limit"}}"#))
        XCTAssertEqual(try second.awaitClose(), 1013)
        _ = try daemon.peer(id: "one", token: "t")
        _ = first
    }

    func test_sameTokenTakesOverAndTheNewSocketGetsOpenAndRelays() throws {
        let daemon = try TestDaemon()
        let old = try daemon.peer(id: "carol", token: "t")
        let new = try daemon.peer(id: "carol", token: "t")
        let sender = try daemon.peer(id: "dave")
        try sender.send(#"{"type":"OFFER","dst":"carol","payload":1}"#)
        XCTAssertEqual(try new.next(), .text(#"{"type":"OFFER","src":"dave","dst":"carol","payload":1}"#))
        try old.close()
        _ = try old.awaitClose()
        try sender.send(#"{"type":"ANSWER","dst":"carol","payload":2}"#)
        XCTAssertEqual(try new.next(), .text(#"{"type":"ANSWER","src":"dave","dst":"carol","payload":2}"#), "closing the old socket must not unregister the id")
    }

    /// Strict clients (Python `websockets`) must be able to read the refusal: an HTTP/1.1 status
    /// line and the JSON error body every other HTTP error has.
    func test_anUpgradeOnAPathThatIsNoEndpointIsAJSON404AndOnTheAdminPortA400() throws {
        let daemon = try TestDaemon()
        let refusals: [(port: Int, path: String, status: Int, code: String)] = [
            (daemon.port, "/peerjs/", 404, "not_found"), (daemon.port, "/peerjsx", 404, "not_found"), (daemon.port, "/", 404, "not_found"),
            (daemon.port, "/v1/connectx", 404, "not_found"), (daemon.adminPort, "/peerjs", 400, "invalid_request"),
        ]
        for refusal in refusals {
            XCTAssertThrowsError(try WebSocketTestClient.connect(port: refusal.port, path: refusal.path + "?key=peerjs&id=a&token=t")) { error in
                guard let refused = error as? WebSocketTestClient.HandshakeRefused else { return XCTFail("\(error)") }
                XCTAssertEqual(refused.status, refusal.status, refusal.path)
                XCTAssertTrue(refused.statusLine.hasPrefix("HTTP/1.1 \(refusal.status) "), refused.statusLine)
                let body = try? JSONSerialization.jsonObject(with: Data(refused.body.utf8)) as? [String: Any]
                XCTAssertEqual((body?["error"] as? [String: Any])?["code"] as? String, refusal.code, refused.body)
            }
        }
    }

    func test_aCustomMountPathMovesTheEndpoint() throws {
        let daemon = try TestDaemon(["peerjs.path": .string("/myapp/")])
        let client = try WebSocketTestClient.connect(port: daemon.port, path: "/myapp/peerjs?key=peerjs&id=a&token=t")
        XCTAssertEqual(try client.next(), .text(#"{"type":"OPEN"}"#))
        XCTAssertThrowsError(try WebSocketTestClient.connect(port: daemon.port, path: "/peerjs?key=peerjs&id=b&token=t"))
    }

    func test_queryValuesAreURLDecoded() throws {
        let daemon = try TestDaemon()
        let spaced = try daemon.peer(id: "with%20space")
        let sender = try daemon.peer(id: "sender")
        try sender.send(#"{"type":"OFFER","dst":"with space","payload":null}"#)
        XCTAssertEqual(try spaced.next(), .text(#"{"type":"OFFER","src":"sender","dst":"with space","payload":null}"#))
    }
}
