import Foundation
import SwitchboardAdmin
import SwitchboardCore
import SwitchboardTesting
import XCTest

/// The SFU and placement routes as plain functions over the in-memory context.
final class SFURoutesTests: XCTestCase {
    private var context: InMemoryAdminContext!
    private var router: AdminRouter!
    private let token = "admin-token"

    override func setUp() {
        context = InMemoryAdminContext()
        router = AdminRoutes.router(configuration: AdminConfiguration(token: token), context: context)
    }

    private func send(_ method: String, _ path: String, body: String = "", bearer: String? = "admin-token", query: [String: String] = [:]) -> HTTPResponse {
        var headers: [String: String] = [:]
        if let bearer { headers["authorization"] = "Bearer \(bearer)" }
        return router.respond(to: HTTPRequest(method: method, path: path, query: query, headers: adminTestHeaders(headers, body: body), body: Array(body.utf8), remoteAddress: "127.0.0.1", listener: .admin))
    }

    private func json(_ response: HTTPResponse) -> [String: Any] {
        (try? JSONSerialization.jsonObject(with: Data(response.body))) as? [String: Any] ?? [:]
    }

    private let fra = #"{"id":"sfu-fra","url":"wss://fra.example/ws","region":"fra","capacity":100,"secret":"0123456789abcdef"}"#

    func test_anSFUIsCreatedReadListedAndAudited() {
        let created = send("POST", "/v1/sfus", body: fra)
        XCTAssertEqual(created.status, 201)
        XCTAssertEqual(json(created)["state"] as? String, "active")
        XCTAssertEqual(json(created)["has_secret"] as? Bool, true)
        XCTAssertNil(json(created)["secret"])
        XCTAssertEqual(json(send("GET", "/v1/sfus/sfu-fra"))["region"] as? String, "fra")
        XCTAssertEqual((json(send("GET", "/v1/sfus"))["sfus"] as? [[String: Any]])?.count, 1)
        XCTAssertEqual(context.memoryLog.all.map(\.action), ["sfu.create"])
        XCTAssertEqual(send("POST", "/v1/sfus", body: fra).status, 409)
        XCTAssertEqual(send("GET", "/v1/sfus/nope").status, 404)
    }

    func test_aBadDefinitionIs400() {
        XCTAssertEqual(send("POST", "/v1/sfus", body: #"{"id":"a","url":"http://x","region":"fra","capacity":1}"#).status, 400)
        XCTAssertEqual(send("POST", "/v1/sfus", body: "nonsense").status, 400)
        // A URL with CR/LF (a header-injection shape once handed to clients) or spaces.
        XCTAssertEqual(send("POST", "/v1/sfus", body: #"{"id":"a","url":"wss://x/\r\nX-Evil: 1","region":"fra","capacity":1}"#).status, 400)
        XCTAssertEqual(send("POST", "/v1/sfus", body: #"{"id":"a","url":"wss://x y","region":"fra","capacity":1}"#).status, 400)
        XCTAssertEqual(send("PUT", "/v1/sfus/a", body: #"{"id":"b","url":"wss://x","region":"fra","capacity":1}"#).status, 400)
    }

    func test_heartbeatsAcceptTheSFUSecretOrTheAdminTokenOnly() {
        _ = send("POST", "/v1/sfus", body: fra)
        let refused = send("POST", "/v1/sfus/sfu-fra/heartbeat", body: #"{"load":5}"#, bearer: nil)
        XCTAssertEqual(refused.status, 401)
        XCTAssertEqual(refused.header("WWW-Authenticate"), "Bearer")
        XCTAssertEqual(send("POST", "/v1/sfus/sfu-fra/heartbeat", body: #"{"load":5}"#, bearer: "0123456789abcdeX").status, 401)
        let ok = send("POST", "/v1/sfus/sfu-fra/heartbeat", body: #"{"load":5}"#, bearer: "0123456789abcdef")
        XCTAssertEqual(ok.status, 200)
        XCTAssertEqual(json(ok)["load"] as? Int, 5)
        XCTAssertEqual(json(ok)["fresh"] as? Bool, true)
        XCTAssertEqual(send("POST", "/v1/sfus/sfu-fra/heartbeat", body: #"{"load":-1}"#).status, 400)
    }

    func test_explainShowsEveryCandidateWithItsFilterAndScore() {
        _ = send("POST", "/v1/sfus", body: fra)
        _ = send("POST", "/v1/sfus", body: #"{"id":"sfu-syd","url":"wss://syd.example/ws","region":"syd","capacity":100}"#)
        _ = send("POST", "/v1/sfus/sfu-fra/heartbeat", body: #"{"load":10}"#)
        let explain = json(send("POST", "/v1/placement/explain", body: #"{"participants":[{"region":"lhr"},{"latitude":48.85,"longitude":2.35},{"rtt":{"sfu-fra":12.5}}]}"#))
        XCTAssertEqual(explain["chosen"] as? String, "sfu-fra")
        let participants = explain["participants"] as? [[String: Any]] ?? []
        XCTAssertEqual(participants.map { $0["source"] as? String }, ["region", "coordinates", "rtt"])
        let candidates = explain["candidates"] as? [[String: Any]] ?? []
        XCTAssertEqual(candidates.map { $0["sfu"] as? String }, ["sfu-fra", "sfu-syd"])
        XCTAssertNotNil(candidates[0]["score"])
        XCTAssertEqual(candidates[0]["load"] as? Int, 10)
        XCTAssertEqual(candidates[1]["rejected"] as? String, "stale")
        XCTAssertNil(candidates[1]["score"])
        XCTAssertEqual(send("POST", "/v1/placement/explain", body: "{}").status, 400)
        XCTAssertEqual(send("POST", "/v1/placement/explain", body: #"{"call_id":"nope"}"#).status, 404)
    }

    func test_deletingAnSFUReportsTheCallsItMoved() throws {
        _ = send("POST", "/v1/sfus", body: fra)
        _ = send("POST", "/v1/sfus", body: #"{"id":"sfu-ams","url":"wss://ams.example/ws","region":"ams","capacity":100}"#)
        _ = send("POST", "/v1/sfus/sfu-fra/heartbeat", body: #"{"load":0}"#)
        _ = send("POST", "/v1/sfus/sfu-ams/heartbeat", body: #"{"load":0}"#)
        _ = try context.directory.place(callID: "default:x", participants: [LocationHint(region: "fra")], commit: context.sfuStore.commit)
        let deleted = json(send("DELETE", "/v1/sfus/sfu-fra"))
        XCTAssertEqual(deleted["deleted"] as? String, "sfu-fra")
        let moves = deleted["reassigned"] as? [[String: Any]] ?? []
        XCTAssertEqual(moves.first?["call_id"] as? String, "default:x")
        XCTAssertEqual(moves.first?["to"] as? String, "sfu-ams")
        XCTAssertEqual(send("DELETE", "/v1/sfus/sfu-fra").status, 404)
    }

    func test_drainIsAuditedAndShowsTheNewState() {
        _ = send("POST", "/v1/sfus", body: fra)
        let drained = send("POST", "/v1/sfus/sfu-fra/drain")
        XCTAssertEqual(json(drained)["state"] as? String, "draining")
        XCTAssertEqual(context.memoryLog.all.last?.action, "sfu.drain")
    }
}
