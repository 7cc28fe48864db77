import Foundation
import SwitchboardCore
import XCTest

final class PeerJSRoutesTests: XCTestCase {
    private func relay(_ configuration: RelayConfiguration = RelayConfiguration(), registering ids: [String] = []) -> PeerRelay {
        var relay = PeerRelay(configuration: configuration)
        var effects: [RelayEffect] = []
        for (index, id) in ids.enumerated() {
            relay.connectionOpened(
                ConnectionID(thread: 0, serial: UInt64(index + 1)), query: ["key": configuration.key, "id": id, "token": "t"],
                now: .zero, into: &effects)
        }
        return relay
    }

    private func get(
        _ path: String, headers: [String: String] = [:], method: String = "GET", routes: PeerJSRoutes = PeerJSRoutes(mountPath: "/"),
        relay: PeerRelay? = nil, newID: () -> String = { "fresh-id" }
    ) -> HTTPResponse? {
        routes.respond(to: HTTPRequest(method: method, path: path, headers: headers), relay: relay ?? self.relay(), newID: newID)
    }

    private func headers(_ response: HTTPResponse?) -> [String] {
        response?.headers.map { "\($0.name): \($0.value)" } ?? []
    }

    private func body(_ response: HTTPResponse?) -> String {
        String(decoding: response?.body ?? [], as: UTF8.self)
    }

    // MARK: Info

    func test_getOnTheMountPathAnswersTheServerInfoAsJSON() throws {
        let response = try XCTUnwrap(get("/"))
        XCTAssertEqual(response.status, 200)
        XCTAssertEqual(response.contentType, "application/json; charset=utf-8")
        let info = try XCTUnwrap(JSONSerialization.jsonObject(with: Data(response.body)) as? [String: String])
        XCTAssertEqual(info.keys.sorted(), ["description", "name", "website"])
        XCTAssertEqual(info["name"], "PeerJS Server")
        XCTAssertEqual(info["website"], "https://peerjs.com/")
        XCTAssertEqual(headers(response), ["Vary: Origin"])
    }

    // MARK: Id

    func test_getIdAnswersAFreshIdAsHTML() throws {
        let response = try XCTUnwrap(get("/peerjs/id"))
        XCTAssertEqual(response.status, 200)
        XCTAssertEqual(response.contentType, "text/html; charset=utf-8")
        XCTAssertEqual(body(response), "fresh-id")
    }

    func test_getIdSkipsCandidatesThatAreAlreadyRegistered() {
        var candidates = ["taken-1", "taken-2", "free"]
        var calls = 0
        let response = get("/peerjs/id", relay: relay(registering: ["taken-1", "taken-2"])) {
            calls += 1
            return candidates.removeFirst()
        }
        XCTAssertEqual(body(response), "free")
        XCTAssertEqual(calls, 3)
    }

    func test_getIdAsksForOneCandidateWhenTheFirstIsFree() {
        var calls = 0
        let response = get("/peerjs/id", relay: relay(registering: ["other"])) {
            calls += 1
            return "candidate-\(calls)"
        }
        XCTAssertEqual(body(response), "candidate-1")
        XCTAssertEqual(calls, 1)
    }

    func test_getIdWithAWrongKeyIs401WithAJSONError() throws {
        let response = try XCTUnwrap(get("/nope/id"))
        XCTAssertEqual(response.status, 401)
        XCTAssertEqual(response.contentType, "application/json; charset=utf-8")
        XCTAssertEqual(body(response), #"{"error":{"code":"unauthenticated","message":"Invalid key provided"}}"#)
    }

    func test_getIdUsesTheConfiguredKey() {
        let custom = relay(RelayConfiguration(key: "k2"))
        XCTAssertEqual(get("/k2/id", relay: custom)?.status, 200)
        XCTAssertEqual(get("/peerjs/id", relay: custom)?.status, 401)
    }

    // MARK: Peers

    func test_getPeersIs401WhenDiscoveryIsOff() throws {
        let response = try XCTUnwrap(get("/peerjs/peers", relay: relay(registering: ["a"])))
        XCTAssertEqual(response.status, 401)
        XCTAssertEqual(response.contentType, "application/json; charset=utf-8")
        XCTAssertEqual(body(response), #"{"error":{"code":"unauthenticated","message":"peer discovery is disabled"}}"#)
    }

    func test_getPeersListsRegisteredIdsSortedWhenDiscoveryIsOn() throws {
        let registered = relay(RelayConfiguration(allowDiscovery: true), registering: ["c", "a", "b\"q"])
        let response = try XCTUnwrap(get("/peerjs/peers", relay: registered))
        XCTAssertEqual(response.status, 200)
        XCTAssertEqual(response.contentType, "application/json; charset=utf-8")
        XCTAssertEqual(body(response), #"["a","b\"q","c"]"#)
    }

    func test_getPeersIsAnEmptyArrayWhenNobodyIsRegistered() {
        XCTAssertEqual(body(get("/peerjs/peers", relay: relay(RelayConfiguration(allowDiscovery: true)))), "[]")
    }

    func test_getPeersWithAWrongKeyIs401EvenWithDiscoveryOn() {
        let response = get("/nope/peers", relay: relay(RelayConfiguration(allowDiscovery: true), registering: ["a"]))
        XCTAssertEqual(response?.status, 401)
        XCTAssertEqual(body(response), #"{"error":{"code":"unauthenticated","message":"Invalid key provided"}}"#)
    }

    // MARK: Methods and unknown routes

    func test_aNonGetMethodIs405WithAllow() throws {
        for method in ["POST", "PUT", "DELETE", "PATCH", "TRACE", "CONNECT"] {
            let response = try XCTUnwrap(get("/peerjs/id", method: method), method)
            XCTAssertEqual(response.status, 405, method)
            XCTAssertEqual(body(response), #"{"error":{"code":"method_not_allowed","message":"only GET is served here"}}"#, method)
            XCTAssertEqual(response.header("Allow"), "GET, HEAD, OPTIONS", method)
        }
    }

    func test_headIsServedLikeGet() {
        XCTAssertEqual(get("/peerjs/id", method: "HEAD")?.status, 200)
    }

    func test_anUnknownPathUnderTheMountIs404() throws {
        for path in ["/peerjs", "/peerjs/foo", "/peerjs/id/extra", "/peerjs/", "/a/b/c"] {
            let response = try XCTUnwrap(get(path), path)
            XCTAssertEqual(response.status, 404, path)
            XCTAssertEqual(response.contentType, "application/json; charset=utf-8", path)
            XCTAssertEqual(body(response), #"{"error":{"code":"not_found","message":"no route for "# + path + #""}}"#, path)
        }
    }

    // MARK: CORS

    func test_theRequestOriginIsReflectedWithVaryOrigin() {
        let response = get("/peerjs/id", headers: ["origin": "https://app.example"])
        XCTAssertEqual(headers(response), ["Access-Control-Allow-Origin: https://app.example", "Vary: Origin"])
    }

    func test_optionsPreflightIs204WithCORSHeaders() throws {
        let response = try XCTUnwrap(get(
            "/peerjs/id", headers: ["origin": "https://app.example", "access-control-request-headers": "content-type"], method: "OPTIONS"))
        XCTAssertEqual(response.status, 204)
        XCTAssertNil(response.contentType)
        XCTAssertEqual(response.body, [])
        XCTAssertEqual(headers(response), [
            "Access-Control-Allow-Origin: https://app.example",
            "Access-Control-Allow-Methods: GET,HEAD,PUT,PATCH,POST,DELETE",
            "Access-Control-Allow-Headers: content-type",
            "Vary: Origin, Access-Control-Request-Headers",
        ])
    }

    func test_optionsPreflightWithoutRequestedHeadersVariesOnOriginOnly() {
        let response = get("/", headers: ["origin": "https://app.example"], method: "OPTIONS")
        XCTAssertEqual(response?.status, 204)
        XCTAssertEqual(headers(response), [
            "Access-Control-Allow-Origin: https://app.example",
            "Access-Control-Allow-Methods: GET,HEAD,PUT,PATCH,POST,DELETE",
            "Vary: Origin",
        ])
    }

    func test_errorResponsesCarryCORSHeadersToo() {
        let response = get("/nope/id", headers: ["origin": "https://app.example"])
        XCTAssertEqual(response?.status, 401)
        XCTAssertEqual(response?.header("access-control-allow-origin"), "https://app.example")
    }

    func test_aConfiguredOriginListAllowsListedOrigins() {
        let routes = PeerJSRoutes(mountPath: "/", corsOrigins: ["https://a.example", "https://b.example"])
        let response = get("/peerjs/id", headers: ["origin": "https://b.example"], routes: routes)
        XCTAssertEqual(headers(response), ["Access-Control-Allow-Origin: https://b.example", "Vary: Origin"])
    }

    func test_aConfiguredOriginListRefusesOtherOrigins() {
        let routes = PeerJSRoutes(mountPath: "/", corsOrigins: ["https://a.example"])
        let response = get("/peerjs/id", headers: ["origin": "https://evil.example"], routes: routes)
        XCTAssertEqual(response?.status, 200)
        XCTAssertEqual(headers(response), ["Vary: Origin"])
        let preflight = get("/peerjs/id", headers: ["origin": "https://evil.example"], method: "OPTIONS", routes: routes)
        XCTAssertNil(preflight?.header("Access-Control-Allow-Origin"))
    }

    // MARK: Mount path

    func test_theDefaultMountServesTheWebSocketAtSlashPeerjs() {
        XCTAssertEqual(PeerJSRoutes(mountPath: "/").webSocketPath, "/peerjs")
    }

    func test_theMountPathIsNormalisedToStartAndEndWithASlash() {
        XCTAssertEqual(PeerJSRoutes(mountPath: "myapp").mountPath, "/myapp/")
        XCTAssertEqual(PeerJSRoutes(mountPath: "/myapp").mountPath, "/myapp/")
        XCTAssertEqual(PeerJSRoutes(mountPath: "/myapp/").mountPath, "/myapp/")
        XCTAssertEqual(PeerJSRoutes(mountPath: "").mountPath, "/")
    }

    func test_aCustomMountPathServesItsRoutesUnderIt() {
        let routes = PeerJSRoutes(mountPath: "/myapp/")
        XCTAssertEqual(routes.webSocketPath, "/myapp/peerjs")
        XCTAssertEqual(get("/myapp/", routes: routes)?.status, 200)
        XCTAssertEqual(get("/myapp", routes: routes)?.status, 200)
        XCTAssertEqual(body(get("/myapp/peerjs/id", routes: routes)), "fresh-id")
        XCTAssertEqual(get("/myapp/nope/id", routes: routes)?.status, 401)
        XCTAssertEqual(get("/myapp/unknown", routes: routes)?.status, 404)
    }

    func test_aPathOutsideTheMountIsNotAPeerJSRoute() {
        let routes = PeerJSRoutes(mountPath: "/myapp/")
        for path in ["/", "/peerjs/id", "/myappx", "/myappx/peerjs/id", "/other/myapp/", "/v1/stats"] {
            XCTAssertNil(get(path, routes: routes), path)
            XCTAssertNil(get(path, method: "OPTIONS", routes: routes), path)
        }
    }
}
