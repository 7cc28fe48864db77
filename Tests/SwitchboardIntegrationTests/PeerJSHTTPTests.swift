import SwitchboardTesting
import XCTest

final class PeerJSHTTPTests: XCTestCase {
    func test_theMountPathAnswersWithServerInfo() throws {
        let daemon = try TestDaemon()
        let response = try daemon.http("GET", "/")
        XCTAssertEqual(response.status, 200)
        XCTAssertEqual(response.headers["content-type"], "application/json; charset=utf-8")
        XCTAssertEqual((response.json as? [String: Any])?["name"] as? String, "PeerJS Server")
    }

    func test_idReturnsAFreshUUIDAsHTML() throws {
        let daemon = try TestDaemon()
        let first = try daemon.http("GET", "/peerjs/id")
        let second = try daemon.http("GET", "/peerjs/id")
        XCTAssertEqual(first.status, 200)
        XCTAssertEqual(first.headers["content-type"], "text/html; charset=utf-8")
        XCTAssertNotNil(UUID(uuidString: first.text), first.text)
        XCTAssertEqual(first.text, first.text.lowercased())
        XCTAssertNotEqual(first.text, second.text)
    }

    func test_peersIsRefusedWhenDiscoveryIsOff() throws {
        let daemon = try TestDaemon()
        let response = try daemon.http("GET", "/peerjs/peers")
        XCTAssertEqual(response.status, 401)
        XCTAssertEqual(((response.json as? [String: Any])?["error"] as? [String: Any])?["code"] as? String, "unauthenticated")
    }

    func test_peersListsConnectedIdsWhenDiscoveryIsOn() throws {
        let daemon = try TestDaemon(["peerjs.allow_discovery": .bool(true)])
        let b = try daemon.peer(id: "b")
        let a = try daemon.peer(id: "a")
        let response = try daemon.http("GET", "/peerjs/peers")
        XCTAssertEqual(response.status, 200)
        XCTAssertEqual(response.text, #"["a","b"]"#)
        _ = (a, b)
    }

    func test_aWrongKeyOnTheHTTPRoutesIs401() throws {
        let daemon = try TestDaemon(["peerjs.allow_discovery": .bool(true)])
        XCTAssertEqual(try daemon.http("GET", "/nope/id").status, 401)
        XCTAssertEqual(try daemon.http("GET", "/nope/peers").status, 401)
    }

    func test_unknownRoutesAre404WithAJSONError() throws {
        let daemon = try TestDaemon()
        let response = try daemon.http("GET", "/peerjs/nothing/here")
        XCTAssertEqual(response.status, 404)
        XCTAssertEqual(((response.json as? [String: Any])?["error"] as? [String: Any])?["code"] as? String, "not_found")
    }

    func test_theRequestOriginIsReflectedWithVary() throws {
        let daemon = try TestDaemon()
        let response = try daemon.http("GET", "/peerjs/id", headers: ["Origin": "https://app.example"])
        XCTAssertEqual(response.headers["access-control-allow-origin"], "https://app.example")
        XCTAssertEqual(response.headers["vary"], "Origin")
    }

    func test_aPreflightIsAnswered204WithTheAskedHeaders() throws {
        let daemon = try TestDaemon()
        let response = try daemon.http("OPTIONS", "/peerjs/id", headers: [
            "Origin": "https://app.example", "Access-Control-Request-Method": "GET",
            "Access-Control-Request-Headers": "content-type,x-custom",
        ])
        XCTAssertEqual(response.status, 204)
        XCTAssertEqual(response.headers["access-control-allow-origin"], "https://app.example")
        XCTAssertEqual(response.headers["access-control-allow-headers"], "content-type,x-custom")
        XCTAssertEqual(response.headers["vary"], "Origin, Access-Control-Request-Headers")
    }

    func test_aConfiguredOriginListRestrictsCORS() throws {
        let daemon = try TestDaemon(["peerjs.cors_origins": .stringArray(["https://good.example"])])
        let good = try daemon.http("GET", "/peerjs/id", headers: ["Origin": "https://good.example"])
        let bad = try daemon.http("GET", "/peerjs/id", headers: ["Origin": "https://evil.example"])
        XCTAssertEqual(good.headers["access-control-allow-origin"], "https://good.example")
        XCTAssertNil(bad.headers["access-control-allow-origin"])
    }

    func test_anOversizedRequestBodyIs413() throws {
        let daemon = try TestDaemon(["transport.max_request_body_bytes": .int(16)])
        let response = try daemon.http("POST", "/peerjs/id", body: Array(repeating: 65, count: 64))
        XCTAssertEqual(response.status, 413)
        XCTAssertEqual(((response.json as? [String: Any])?["error"] as? [String: Any])?["code"] as? String, "payload_too_large")
    }

    func test_aPostToAGetRouteIs405() throws {
        let daemon = try TestDaemon()
        XCTAssertEqual(try daemon.http("POST", "/peerjs/id", body: Array("x".utf8)).status, 405)
    }
}
