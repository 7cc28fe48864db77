import Foundation
import SwitchboardAdmin
import SwitchboardCore
import SwitchboardTesting
import XCTest

/// The admin routes as plain functions: request values in, response values out, no sockets.
final class AdminRoutesTests: XCTestCase {
    private var context: InMemoryAdminContext!
    private var router: AdminRouter!
    private let token = "correct-horse-battery"

    override func setUp() {
        context = InMemoryAdminContext(peers: ["carol", "alice", "bob"])
        router = AdminRoutes.router(configuration: AdminConfiguration(token: token), context: context)
    }

    private func send(_ method: String, _ path: String, query: [String: String] = [:], body: String = "", token: String?? = .some(nil)) -> HTTPResponse {
        var headers: [String: String] = [:]
        switch token {
        case .some(.some(let value)): headers["authorization"] = "Bearer \(value)"
        case .some(.none): headers["authorization"] = "Bearer \(self.token)"
        case .none: break
        }
        return router.respond(to: HTTPRequest(method: method, path: path, query: query, headers: adminTestHeaders(headers, body: body), body: Array(body.utf8), remoteAddress: "127.0.0.1", listener: .admin))
    }

    private func json(_ response: HTTPResponse) -> [String: Any] {
        (try? JSONSerialization.jsonObject(with: Data(response.body))) as? [String: Any] ?? [:]
    }

    private func errorCode(_ response: HTTPResponse) -> String? {
        (json(response)["error"] as? [String: Any])?["code"] as? String
    }

    func test_healthzNeedsNoToken() {
        let response = send("GET", "/healthz", token: .none)
        XCTAssertEqual(response.status, 200)
        XCTAssertEqual(String(decoding: response.body, as: UTF8.self), #"{"status":"ok"}"#)
    }

    func test_everyOtherRouteRefusesAMissingWrongOrAlmostRightToken() {
        for candidate: String?? in [.none, .some("wrong"), .some(String(token.dropLast())), .some(token + "x"), .some("")] {
            for (method, path) in [("GET", "/readyz"), ("GET", "/metrics"), ("GET", "/v1/stats"), ("GET", "/v1/peers"), ("POST", "/v1/drain")] {
                let response = send(method, path, token: candidate)
                XCTAssertEqual(response.status, 401, "\(method) \(path) with \(String(describing: candidate))")
                XCTAssertEqual(errorCode(response), "unauthenticated")
                XCTAssertEqual(response.header("WWW-Authenticate"), "Bearer")
            }
        }
        XCTAssertFalse(context.isDraining, "a refused drain must not drain")
    }

    func test_aTokenWithoutTheBearerSchemeIsRefused() {
        let response = router.respond(to: HTTPRequest(method: "GET", path: "/v1/stats", headers: adminTestHeaders(["authorization": token]), listener: .admin))
        XCTAssertEqual(response.status, 401)
    }

    func test_withoutAConfiguredTokenEveryRouteIsOpen() {
        let open = AdminRoutes.router(configuration: AdminConfiguration(auth: .none, token: nil), context: context)
        XCTAssertEqual(open.respond(to: HTTPRequest(method: "GET", path: "/v1/stats", headers: adminTestHeaders([:]), listener: .admin)).status, 200)
    }

    func test_anUnknownRouteIsA404JSONError() {
        let response = send("GET", "/v1/nothing")
        XCTAssertEqual(response.status, 404)
        XCTAssertEqual(errorCode(response), "not_found")
    }

    func test_aKnownPathWithTheWrongMethodIs405WithAllow() {
        let response = send("POST", "/v1/stats")
        XCTAssertEqual(response.status, 405)
        XCTAssertEqual(errorCode(response), "method_not_allowed")
        XCTAssertEqual(response.header("Allow"), "GET, HEAD")
    }

    func test_peersArePaginatedInIdOrder() {
        let first = json(send("GET", "/v1/peers", query: ["limit": "2"]))
        XCTAssertEqual((first["peers"] as? [[String: String]])?.map { $0["id"]! }, ["alice", "bob"])
        XCTAssertEqual(first["next_cursor"] as? String, "bob")
        let second = json(send("GET", "/v1/peers", query: ["limit": "2", "cursor": "bob"]))
        XCTAssertEqual((second["peers"] as? [[String: String]])?.map { $0["id"]! }, ["carol"])
        XCTAssertTrue(second["next_cursor"] is NSNull)
    }

    func test_aBadLimitIs400() {
        for limit in ["0", "1001", "ten", "-1"] {
            let response = send("GET", "/v1/peers", query: ["limit": limit])
            XCTAssertEqual(response.status, 400, limit)
            XCTAssertEqual(errorCode(response), "invalid_request")
        }
    }

    func test_deletingAPeerDisconnectsItAndIsAudited() {
        let response = send("DELETE", "/v1/peers/bob")
        XCTAssertEqual(response.status, 200)
        XCTAssertEqual(json(response)["disconnected"] as? String, "bob")
        XCTAssertEqual(json(response)["audit_id"] as? Int, 1)
        XCTAssertEqual(context.peers().map(\.rawValue), ["alice", "carol"])
        XCTAssertEqual(context.memoryLog.all.map(\.action), ["peer.disconnect"])
        XCTAssertEqual(context.memoryLog.all.first?.target, "bob")
        XCTAssertEqual(context.memoryLog.all.first?.actor, "127.0.0.1")
        XCTAssertEqual(send("DELETE", "/v1/peers/bob").status, 404)
    }

    func test_pathParametersAreTakenAsTheTransportDecodedThem() {
        context = InMemoryAdminContext(peers: ["with space", "a%41"])
        router = AdminRoutes.router(configuration: AdminConfiguration(token: token), context: context)
        XCTAssertEqual(send("DELETE", "/v1/peers/with space").status, 200)
        XCTAssertEqual(send("DELETE", "/v1/peers/a%41").status, 200, "no second round of percent-decoding")
    }

    func test_theLogLevelCanBeReadAndSet() {
        XCTAssertEqual(json(send("GET", "/v1/log-level"))["level"] as? String, "info")
        let response = send("PUT", "/v1/log-level", body: #"{"level":"debug"}"#)
        XCTAssertEqual(response.status, 200)
        XCTAssertEqual(json(response)["level"] as? String, "debug")
        XCTAssertEqual(context.logLevel(), "debug")
    }

    func test_aBadLogLevelBodyIs400AndChangesNothing() {
        for body in [#"{"level":"loud"}"#, "not json", "", #"{"lvl":"debug"}"#, "[]"] {
            let response = send("PUT", "/v1/log-level", body: body)
            XCTAssertEqual(response.status, 400, body)
            XCTAssertEqual(errorCode(response), "invalid_request", body)
        }
        XCTAssertEqual(context.logLevel(), "info")
        XCTAssertTrue(context.memoryLog.all.isEmpty)
    }

    func test_drainFlipsReadinessTo503() {
        XCTAssertEqual(send("GET", "/readyz").status, 200)
        let drained = send("POST", "/v1/drain")
        XCTAssertEqual(drained.status, 202)
        XCTAssertEqual(json(drained)["draining"] as? Bool, true)
        let ready = send("GET", "/readyz")
        XCTAssertEqual(ready.status, 503)
        XCTAssertEqual(json(ready)["ready"] as? Bool, false)
        XCTAssertEqual((json(ready)["checks"] as? [String: Bool])?["draining"], true)
    }

    func test_anUnwritableStoreMakesReadinessFalseAndMutationsFailWith503() {
        context.memoryLog.setFailing(true)
        XCTAssertEqual(send("GET", "/readyz").status, 503)
        let response = send("PUT", "/v1/log-level", body: #"{"level":"debug"}"#)
        XCTAssertEqual(response.status, 503)
        XCTAssertEqual(errorCode(response), "unavailable")
    }

    func test_metricsAreServedAsPrometheusText() {
        let response = send("GET", "/metrics")
        XCTAssertEqual(response.status, 200)
        XCTAssertEqual(response.contentType, "text/plain; version=0.0.4; charset=utf-8")
        XCTAssertEqual(String(decoding: response.body, as: UTF8.self), context.metrics)
    }

    func test_theAuditLogIsListedNewestFirstWithACursor() {
        _ = send("PUT", "/v1/log-level", body: #"{"level":"debug"}"#)
        _ = send("PUT", "/v1/log-level", body: #"{"level":"info"}"#)
        _ = send("POST", "/v1/drain")
        let page = json(send("GET", "/v1/audit", query: ["limit": "2"]))
        let entries = page["entries"] as? [[String: Any]] ?? []
        XCTAssertEqual(entries.map { $0["action"] as? String }, ["drain", "log_level.set"])
        XCTAssertEqual(entries.last?["at"] as? String, "2027-01-15T08:00:00Z")
        XCTAssertEqual(page["next_cursor"] as? String, "2")
        let rest = json(send("GET", "/v1/audit", query: ["cursor": "2"]))
        XCTAssertEqual((rest["entries"] as? [[String: Any]])?.map { $0["target"] as? String }, ["debug"])
        XCTAssertEqual(send("GET", "/v1/audit", query: ["cursor": "abc"]).status, 400)
    }

    func test_statsAreJSONWithSnakeCaseKeys() {
        let stats = json(send("GET", "/v1/stats"))
        XCTAssertEqual(stats["version"] as? String, "test")
        XCTAssertNotNil((stats["peerjs"] as? [String: Any])?["queued_messages"])
    }
}

extension AdminRoutesTests {
    func test_aLogLevelChangeWhoseAuditWriteFailsIsRolledBack() {
        context.memoryLog.setFailing(true)
        XCTAssertEqual(send("PUT", "/v1/log-level", body: #"{"level":"debug"}"#).status, 503)
        XCTAssertEqual(context.logLevel(), "info")
    }
}

extension AdminRoutesTests {
    func test_aTokenIsMintedAuditedAndValidated() {
        let response = send("POST", "/v1/tokens", body: #"{"user_id":"alice","ttl_seconds":60}"#)
        XCTAssertEqual(response.status, 201)
        XCTAssertEqual(json(response)["token"] as? String, "token-for-alice")
        XCTAssertEqual(json(response)["user_id"] as? String, "alice")
        XCTAssertEqual(json(response)["expires_at"] as? String, "2027-01-15T08:01:00Z")
        XCTAssertEqual(context.memoryLog.all.last?.action, "token.mint")
        XCTAssertEqual(send("POST", "/v1/tokens", body: #"{"ttl_seconds":60}"#).status, 400)
        context.mintsTokens = false
        XCTAssertEqual(send("POST", "/v1/tokens", body: #"{"user_id":"a"}"#).status, 503)
    }
}
