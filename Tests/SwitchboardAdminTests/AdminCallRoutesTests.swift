import Foundation
import Logging
import SwitchboardAdmin
import SwitchboardApp
import SwitchboardCore
import SwitchboardTesting
import XCTest

/// The call routes over a real ``CallHub`` whose in-memory store is seeded before it starts
/// (so live calls, sessions and connections are restored from it).
final class AdminCallRoutesTests: XCTestCase {
    private var context: InMemoryAdminContext!
    private var router: AdminRouter!
    private var store: InMemoryCallStore!
    private var hub: CallHub!
    /// The creation time of the oldest seeded call; the others follow a second apart.
    private let t0 = Date(timeIntervalSince1970: 1_800_000_000)
    private var t0ms: Int64 { Int64(t0.timeIntervalSince1970 * 1000) }

    override func setUpWithError() throws {
        store = InMemoryCallStore()
        try store.apply(Self.seed(t0))
        hub = CallHub(
            queue: DispatchQueue(label: "test.calls"), configuration: CallConfiguration(), store: store, placement: FixedPlacement(),
            tokenVerifier: nil, logger: Logger(label: "test", factory: { _ in SwiftLogNoOpLogHandler() }))
        try hub.start(transport: InMemoryTransport())
        context = InMemoryAdminContext()
        context.calls = hub
        router = AdminRoutes.router(configuration: AdminConfiguration(token: "admin-token"), context: context)
    }

    override func tearDown() { hub.stop() }

    /// Four calls, newest first: `default:standup` (live; alice and bob in it), `ringing:call-1`
    /// (ended, no answer), `default:retro` (ended, empty), `default:idle` (live, nobody in it).
    private static func seed(_ t0: Date) -> [CallMutation] {
        func at(_ seconds: Double) -> Date { t0.addingTimeInterval(seconds) }
        func cid(_ type: String, _ id: String) -> CallCID { CallCID(type: type, id: id)! }
        func user(_ name: String) -> UserID { UserID(name)! }
        let (standup, ring, retro, idle) = (cid("default", "standup"), cid("ringing", "call-1"), cid("default", "retro"), cid("default", "idle"))
        var mutations: [CallMutation] = [
            .saveCall(CallRecord(cid: idle, createdBy: user("dave"), createdAt: at(0))),
            .saveCall(CallRecord(cid: retro, createdBy: user("bob"), createdAt: at(1), endedAt: at(1.5), endedReason: .empty)),
            .saveCall(CallRecord(cid: ring, createdBy: user("carol"), createdAt: at(2), endedAt: at(32), endedReason: .noAnswer, rung: true)),
            .saveCall(CallRecord(cid: standup, createdBy: user("alice"), createdAt: at(3), custom: .object(["topic": .string("daily")]))),
            .saveMember(MemberRecord(cid: idle, userID: user("dave"), addedAt: at(0))),
            .saveMember(MemberRecord(cid: retro, userID: user("bob"), addedAt: at(1))),
            .saveMember(MemberRecord(cid: ring, userID: user("carol"), addedAt: at(2))),
            .saveMember(MemberRecord(cid: ring, userID: user("dave"), addedAt: at(2), ringState: .missed, ringUpdatedAt: at(32))),
            .saveMember(MemberRecord(cid: standup, userID: user("alice"), addedAt: at(3))),
            .saveMember(MemberRecord(cid: standup, userID: user("bob"), addedAt: at(3))),
        ]
        for (name, offset) in [("alice", 4.0), ("bob", 5.0)] {
            let connection = ClientConnectionID("c-\(name)")
            mutations.append(
                .saveConnection(ConnectionRecord(id: connection, userID: user(name), resumeToken: "r-\(name)", connectedAt: at(offset), tokenExpiresAt: at(3600))))
            let role: ParticipantRole = name == "alice" ? .initiator : .participant
            mutations.append(
                .saveSession(SessionRecord(sessionID: SessionID("s-\(name)"), cid: standup, callSession: 1, userID: user(name), connection: connection, role: role, joinedAt: at(offset))))
        }
        for (type, offset) in [("call.created", 3.0), ("call.participant_joined", 4.0), ("call.participant_joined", 5.0)] {
            mutations.append(.appendEvent(CallEventRecord(cid: standup, callSession: 1, at: at(offset), type: type, payload: .object(["n": .number(offset)]))))
        }
        return mutations
    }

    // MARK: - Helpers

    private func send(_ method: String, _ path: String, query: [String: String] = [:], bearer: String? = "admin-token") -> HTTPResponse {
        var headers: [String: String] = [:]
        if let bearer { headers["authorization"] = "Bearer \(bearer)" }
        return router.respond(to: HTTPRequest(method: method, path: path, query: query, headers: adminTestHeaders(headers), remoteAddress: "127.0.0.1", listener: .admin))
    }

    private func json(_ response: HTTPResponse) -> [String: Any] { jsonObject(response) }

    private func error(_ response: HTTPResponse) -> (code: String?, message: String) {
        let error = json(response)["error"] as? [String: Any]
        return (error?["code"] as? String, error?["message"] as? String ?? "")
    }

    private func cids(_ query: [String: String] = [:]) -> [String] {
        let response = send("GET", "/v1/calls", query: query)
        XCTAssertEqual(response.status, 200, "\(query)")
        return (json(response)["calls"] as? [[String: Any]] ?? []).compactMap { $0["cid"] as? String }
    }

    private func storedCall(_ type: String, _ id: String) throws -> CallDetail {
        try XCTUnwrap(try store.callDetail(CallCID(type: type, id: id)!, eventLimit: 100))
    }

    // MARK: - GET /v1/calls

    func test_historyIsNewestFirstAndEveryFilterNarrowsIt() {
        XCTAssertEqual(cids(), ["default:standup", "ringing:call-1", "default:retro", "default:idle"])
        XCTAssertEqual(cids(["state": "live"]), ["default:standup", "default:idle"])
        XCTAssertEqual(cids(["state": "ended"]), ["ringing:call-1", "default:retro"])
        XCTAssertEqual(cids(["type": "ringing"]), ["ringing:call-1"])
        XCTAssertEqual(cids(["member": "bob"]), ["default:standup", "default:retro"])
        XCTAssertEqual(cids(["member": "nobody"]), [])
        XCTAssertEqual(cids(["created_from": "\(t0ms + 1000)", "created_before": "\(t0ms + 3000)"]), ["ringing:call-1", "default:retro"])
        XCTAssertEqual(cids(["state": "live", "type": "default", "member": "dave"]), ["default:idle"])
    }

    func test_aListedCallCarriesTheAdminView() throws {
        let body = json(send("GET", "/v1/calls", query: ["type": "ringing"]))
        XCTAssertTrue(body["next_cursor"] is NSNull)
        let call = try XCTUnwrap((body["calls"] as? [[String: Any]])?.first)
        XCTAssertEqual(["cid", "type", "id", "created_by", "ended_reason"].map { call[$0] as? String }, ["ringing:call-1", "ringing", "call-1", "carol", "no_answer"])
        XCTAssertEqual(["created_at", "ended_at", "session"].map { call[$0] as? Int64 }, [t0ms + 2000, t0ms + 32000, 1])
        XCTAssertEqual(["live", "rung"].map { call[$0] as? Bool }, [false, true])
        XCTAssertEqual(Set(call.keys).count, 13)
        let live = try XCTUnwrap((json(send("GET", "/v1/calls", query: ["limit": "1"]))["calls"] as? [[String: Any]])?.first)
        XCTAssertTrue(live["ended_at"] is NSNull)
        XCTAssertEqual((live["custom"] as? [String: Any])?["topic"] as? String, "daily")
    }

    func test_pagesChainThroughNextUntilItIsNull() throws {
        let first = json(send("GET", "/v1/calls", query: ["limit": "3"]))
        XCTAssertEqual((first["calls"] as? [Any])?.count, 3)
        let next = try XCTUnwrap(first["next_cursor"] as? String)
        let second = json(send("GET", "/v1/calls", query: ["limit": "3", "cursor": next]))
        XCTAssertEqual((second["calls"] as? [[String: Any]])?.compactMap { $0["cid"] as? String }, ["default:idle"])
        XCTAssertTrue(second["next_cursor"] is NSNull)
        XCTAssertEqual(cids(["limit": "2", "cursor": ""]), ["default:standup", "ringing:call-1"], "an empty cursor is the first page")
        XCTAssertEqual(cids(["limit": "1000"]).count, 4)
    }

    func test_theCallHistoryTakesTheSameLimitRuleAsEveryOtherList() throws {
        XCTAssertEqual(send("GET", "/v1/calls", query: ["limit": "1000"]).status, 200)
        let refused = send("GET", "/v1/calls", query: ["limit": "1001"])
        XCTAssertEqual(refused.status, 400)
        XCTAssertTrue(String(decoding: refused.body, as: UTF8.self).contains("limit must be an integer from 1 to 1000"))
        XCTAssertEqual(CallQuery.limits, 1...1000)
        XCTAssertEqual(CallQuery.defaultLimit, 100)
    }

    func test_badQueryParametersAre400NamingTheParameter() {
        let bad: [(String, String)] = [
            ("state", "open"), ("state", ""), ("type", "a b"), ("type", ""), ("type", String(repeating: "t", count: 65)),
            ("member", ""), ("member", "a\u{1}b"), ("member", String(repeating: "m", count: 129)), ("limit", "0"),
            ("limit", "1001"), ("limit", "ten"), ("created_from", "-1"), ("created_from", "1.5"), ("created_before", "soon"),
            ("created_before", "253402300800000"), ("cursor", "not a cursor"),
        ]
        for (name, value) in bad {
            let response = send("GET", "/v1/calls", query: [name: value])
            XCTAssertEqual(response.status, 400, "\(name)=\(value)")
            XCTAssertEqual(error(response).code, "invalid_request", "\(name)=\(value)")
            XCTAssertTrue(error(response).message.contains(name), "\(name)=\(value): \(error(response).message)")
        }
    }

    // MARK: - GET /v1/calls/{type}/{id}

    func test_detailShowsMembersSessionsAndTheLatestEvents() throws {
        let response = send("GET", "/v1/calls/default/standup")
        XCTAssertEqual(response.status, 200)
        let body = json(response)
        XCTAssertEqual((body["call"] as? [String: Any])?["cid"] as? String, "default:standup")
        XCTAssertTrue(body["sfu"] is NSNull, "peer-to-peer: no SFU")
        let members = try XCTUnwrap(body["members"] as? [[String: Any]])
        XCTAssertEqual(members.compactMap { $0["user_id"] as? String }, ["alice", "bob"])
        XCTAssertEqual([members.first?["ring_state"] as? String, members.first?["added_at"].map { "\($0)" }], ["none", "\(t0ms + 3000)"])
        let sessions = try XCTUnwrap(body["sessions"] as? [[String: Any]])
        XCTAssertEqual(sessions.compactMap { $0["session_id"] as? String }, ["s-alice", "s-bob"])
        XCTAssertEqual(sessions.compactMap { $0["connection_id"] as? String }, ["c-alice", "c-bob"])
        XCTAssertEqual(sessions.compactMap { $0["role"] as? String }, ["initiator", "participant"])
        XCTAssertEqual(sessions.compactMap { $0["active"] as? Bool }, [true, true])
        XCTAssertTrue(sessions.first?["left_at"] is NSNull)
        let events = try XCTUnwrap(body["events"] as? [[String: Any]])
        XCTAssertEqual(events.compactMap { $0["type"] as? String }, ["call.created", "call.participant_joined", "call.participant_joined"])
        let latest = json(send("GET", "/v1/calls/default/standup", query: ["events": "1"]))["events"] as? [[String: Any]]
        XCTAssertEqual(latest?.compactMap { $0["at"] as? Int64 }, [t0ms + 5000])
        XCTAssertEqual((json(send("GET", "/v1/calls/default/standup", query: ["events": "0"]))["events"] as? [Any])?.count, 0)
        for events in ["1001", "-1", "x"] {
            XCTAssertEqual(send("GET", "/v1/calls/default/standup", query: ["events": events]).status, 400, events)
        }
    }

    func test_anEndedCallKeepsItsHistory() throws {
        let body = json(send("GET", "/v1/calls/ringing/call-1"))
        XCTAssertEqual((body["call"] as? [String: Any])?["ended_reason"] as? String, "no_answer")
        let dave = try XCTUnwrap((body["members"] as? [[String: Any]])?.last)
        XCTAssertEqual(["user_id", "ring_state"].map { dave[$0] as? String }, ["dave", "missed"])
        XCTAssertEqual(dave["ring_updated_at"] as? Int64, t0ms + 32000)
    }

    func test_unknownCallsAre404AndMalformedAddressesAre400() {
        XCTAssertEqual(send("GET", "/v1/calls/default/nobody").status, 404)
        XCTAssertEqual(error(send("GET", "/v1/calls/default/nobody")).code, "call_not_found")
        XCTAssertEqual(error(send("GET", "/v1/calls/unconfigured/nobody")).code, "call_not_found")
        for path in ["/v1/calls/de.fault/x", "/v1/calls/default/a:b", "/v1/calls/default/\(String(repeating: "x", count: 65))"] {
            let response = send("GET", path)
            XCTAssertEqual(response.status, 400, path)
            XCTAssertEqual(error(response).code, "invalid_request", path)
            XCTAssertEqual(send("POST", path + "/end").status, 400, path)
            XCTAssertEqual(send("DELETE", path + "/sessions/s-alice").status, 400, path)
        }
        XCTAssertEqual(send("DELETE", "/v1/calls/default/standup/sessions/s.alice").status, 400)
        XCTAssertEqual(send("DELETE", "/v1/calls/default/standup/sessions/\(String(repeating: "s", count: 65))").status, 400, "one rule with the call protocol: 1–64")
        XCTAssertEqual(send("DELETE", "/v1/calls/default/standup/sessions/\(String(repeating: "s", count: 64))").status, 404)
        XCTAssertTrue(context.memoryLog.all.isEmpty)
    }

    // MARK: - POST /v1/calls/{type}/{id}/end

    func test_endingALiveCallCommitsItAndAuditsIt() throws {
        let response = send("POST", "/v1/calls/default/standup/end")
        XCTAssertEqual(response.status, 200)
        let body = json(response)
        XCTAssertEqual([body["ended"] as? Bool, body["cid"].map { $0 as? String == "default:standup" }], [true, true])
        let stored = try storedCall("default", "standup")
        XCTAssertNotNil(stored.call.endedAt)
        XCTAssertEqual(stored.call.endedReason, .admin)
        XCTAssertEqual(stored.sessions.map(\.leftReason), ["call_ended", "call_ended"])
        XCTAssertEqual(stored.events.last?.type, "call.ended")
        let entries = context.memoryLog.all
        XCTAssertEqual(entries.map { [$0.action, $0.target, $0.actor] }, [["call.end", "default:standup", "127.0.0.1"]])
        XCTAssertEqual(body["audit_id"] as? Int64, entries.first?.id)
        XCTAssertEqual(cids(["state": "live"]), ["default:idle"])
    }

    func test_endingAnEndedOrUnknownCallIsRefusedAndNotAudited() {
        XCTAssertEqual(send("POST", "/v1/calls/default/standup/end").status, 200)
        XCTAssertEqual(send("POST", "/v1/calls/default/standup/end").status, 409)
        XCTAssertEqual(error(send("POST", "/v1/calls/default/standup/end")).code, "call_ended")
        let endedBeforeRestart = send("POST", "/v1/calls/ringing/call-1/end")
        XCTAssertEqual(endedBeforeRestart.status, 409, "only in the store, still ended")
        XCTAssertEqual(error(endedBeforeRestart).code, "call_ended")
        XCTAssertEqual(error(send("POST", "/v1/calls/default/nobody/end")).code, "call_not_found")
        XCTAssertEqual(context.memoryLog.all.map(\.action), ["call.end"])
    }

    func test_aFailedCommitIs503AndChangesNothing() throws {
        store.failNextApply = true
        let response = send("POST", "/v1/calls/default/standup/end")
        XCTAssertEqual(response.status, 503)
        XCTAssertEqual(error(response).code, "unavailable")
        XCTAssertTrue(try storedCall("default", "standup").call.isLive)
        XCTAssertTrue(context.memoryLog.all.isEmpty)
        XCTAssertEqual(send("POST", "/v1/calls/default/standup/end").status, 200, "the call is still live in memory too")
    }

    func test_anUnwritableAuditLogIs503AfterTheCallEnded() throws {
        context.memoryLog.setFailing(true)
        let response = send("POST", "/v1/calls/default/standup/end")
        XCTAssertEqual(response.status, 503)
        XCTAssertTrue(error(response).message.contains("audit"))
        XCTAssertFalse(try storedCall("default", "standup").call.isLive, "the action took effect, as with the other audited routes")
    }

    // MARK: - DELETE /v1/calls/{type}/{id}/sessions/{session}

    func test_removingASessionMarksItKickedAndAuditsIt() throws {
        let response = send("DELETE", "/v1/calls/default/standup/sessions/s-bob")
        XCTAssertEqual(response.status, 200)
        let body = json(response)
        XCTAssertEqual(body["removed"] as? Bool, true)
        XCTAssertEqual(["cid", "session_id"].map { body[$0] as? String }, ["default:standup", "s-bob"])
        let stored = try storedCall("default", "standup")
        let bob = try XCTUnwrap(stored.sessions.first { $0.sessionID == SessionID("s-bob") })
        XCTAssertEqual(bob.leftReason, "kicked")
        XCTAssertNotNil(bob.leftAt)
        XCTAssertTrue(stored.call.isLive, "a participant leaving never ends the call")
        XCTAssertTrue(try XCTUnwrap(stored.sessions.first { $0.sessionID == SessionID("s-alice") }).isActive)
        let entry = try XCTUnwrap(context.memoryLog.all.first)
        XCTAssertEqual([entry.action, entry.target, entry.detail], ["call.session.remove", "default:standup", "session s-bob"])
        XCTAssertEqual(body["audit_id"] as? Int64, entry.id)

        XCTAssertEqual(error(send("DELETE", "/v1/calls/default/standup/sessions/s-bob")).code, "session_not_found")
        XCTAssertEqual(send("DELETE", "/v1/calls/default/idle/sessions/s-alice").status, 404, "a session of another call")
        XCTAssertEqual(send("DELETE", "/v1/calls/default/nobody/sessions/s-alice").status, 404)
        XCTAssertEqual(context.memoryLog.all.count, 1)
    }

    // MARK: - GET /v1/connections

    func test_connectionsListsRestoredConnectionsWaitingForAResume() throws {
        let connections = try XCTUnwrap(json(send("GET", "/v1/connections"))["connections"] as? [[String: Any]])
        XCTAssertEqual(connections.map { [$0["connection_id"] as? String, $0["user_id"] as? String] }, [["c-alice", "alice"], ["c-bob", "bob"]])
        XCTAssertEqual(connections.compactMap { $0["attached"] as? Bool }, [false, false])
        XCTAssertEqual(connections.first?["sessions"] as? [String], ["s-alice"])
        XCTAssertEqual(connections.first?["connected_at"] as? Int64, t0ms + 4000)
        XCTAssertEqual(connections.first?["token_expires_at"] as? Int64, t0ms + 3_600_000)
        XCTAssertNotNil(connections.first?["detached_at"] as? Int64)
    }

    // MARK: - Router behaviour

    private let everyRoute = [
        ("GET", "/v1/calls"), ("GET", "/v1/calls/default/standup"), ("POST", "/v1/calls/default/standup/end"),
        ("DELETE", "/v1/calls/default/standup/sessions/s-bob"), ("GET", "/v1/connections"),
    ]

    func test_withTheCallProtocolOffEveryCallRouteIs404() {
        context.calls = nil
        for (method, path) in everyRoute {
            let response = send(method, path)
            XCTAssertEqual(response.status, 404, "\(method) \(path)")
            XCTAssertEqual(error(response).code, "not_found")
            XCTAssertEqual(error(response).message, "the call protocol is off")
        }
        XCTAssertTrue(context.memoryLog.all.isEmpty)
    }

    func test_callRoutesNeedTheTokenAndAnswer405ToOtherMethods() {
        for (method, path) in everyRoute {
            XCTAssertEqual(send(method, path, bearer: nil).status, 401, "\(method) \(path)")
            XCTAssertEqual(send(method, path, bearer: "wrong").status, 401, "\(method) \(path)")
        }
        XCTAssertTrue(try storedCall("default", "standup").call.isLive)
        let post = send("POST", "/v1/calls")
        XCTAssertEqual(post.status, 405)
        XCTAssertEqual(post.header("Allow"), "GET, HEAD")
        XCTAssertEqual(send("GET", "/v1/calls/default/standup/end").header("Allow"), "POST")
        XCTAssertEqual(send("DELETE", "/v1/calls/default/standup").status, 405)
        XCTAssertEqual(send("GET", "/v1/calls/default/standup/sessions/s-bob").header("Allow"), "DELETE")
        XCTAssertEqual(send("HEAD", "/v1/connections").status, 200)
    }
}

/// The call routes over a hub driven by real call-protocol frames through ``SignalingHub``.
final class AdminCallRoutesLiveTests: XCTestCase {
    private let transport = InMemoryTransport()
    private var signaling: SignalingHub!
    private var hub: CallHub!
    private var router: AdminRouter!
    private let sfu = SFUAssignment(id: "sfu-fra-1", url: "wss://sfu-fra-1.example.net/ws", region: "fra")
    private let socket = ConnectionID(thread: 0, serial: 7)

    override func setUpWithError() throws {
        let logger = Logger(label: "test", factory: { _ in SwiftLogNoOpLogHandler() })
        signaling = SignalingHub(relay: RelayConfiguration(), routes: PeerJSRoutes(mountPath: "/"), logger: logger)
        hub = CallHub(
            queue: signaling.queue, configuration: CallConfiguration(), store: InMemoryCallStore(), placement: FixedPlacement(sfu: sfu),
            tokenVerifier: NameVerifier(), logger: logger)
        signaling.start(transport: transport)
        try hub.start(transport: transport)
        signaling.attach(calls: hub, path: "/v1/connect")
        let context = InMemoryAdminContext()
        context.calls = hub
        router = AdminRoutes.router(configuration: AdminConfiguration(auth: .none, token: nil), context: context)
    }

    override func tearDown() {
        hub.stop()
        signaling.stop()
    }

    private func get(_ path: String) -> [String: Any] {
        let response = router.respond(to: HTTPRequest(method: "GET", path: path, headers: adminTestHeaders([:]), listener: .admin))
        XCTAssertEqual(response.status, 200, path)
        return jsonObject(response)
    }

    /// Waits until the socket was sent a frame containing `marker`.
    private func waitForFrame(containing marker: String) {
        let deadline = Date(timeIntervalSinceNow: 5)
        while !transport.commands.contains(where: { command in
            guard case .send(socket, let bytes) = command else { return false }
            return String(decoding: bytes, as: UTF8.self).contains(marker)
        }) {
            guard Date() < deadline else { return XCTFail("no frame containing \(marker)") }
            Thread.sleep(forTimeInterval: 0.01)
        }
    }

    func test_aJoinedCallShowsItsSFUAndTheAttachedConnection() throws {
        let upgrade = WebSocketUpgrade(path: "/v1/connect", query: ["token": "alice"], remoteAddress: "192.0.2.10")
        signaling.transportDidReceive([.opened(socket, upgrade)])
        waitForFrame(containing: "connection.ok")
        let join = #"{"id":1,"type":"call.join","data":{"type":"default","id":"standup","create":true}}"#
        signaling.transportDidReceive([.message(socket, Array(join.utf8), isBinary: false)])
        waitForFrame(containing: "session_id")

        let detail = get("/v1/calls/default/standup")
        XCTAssertEqual(detail["sfu"] as? [String: String], ["id": "sfu-fra-1", "kind": "heartbeat", "url": "wss://sfu-fra-1.example.net/ws", "region": "fra"])
        let session = try XCTUnwrap((detail["sessions"] as? [[String: Any]])?.first)
        XCTAssertEqual(session["user_id"] as? String, "alice")
        let connection = try XCTUnwrap((get("/v1/connections")["connections"] as? [[String: Any]])?.first)
        XCTAssertEqual(connection["attached"] as? Bool, true)
        XCTAssertEqual(connection["remote_address"] as? String, "192.0.2.10")
        XCTAssertEqual(connection["sessions"] as? [String], [try XCTUnwrap(session["session_id"] as? String)])

        let end = router.respond(to: HTTPRequest(method: "POST", path: "/v1/calls/default/standup/end", headers: adminTestHeaders([:]), listener: .admin))
        XCTAssertEqual(end.status, 200)
        waitForFrame(containing: "call.ended")
        XCTAssertTrue(get("/v1/calls/default/standup")["sfu"] is NSNull, "an ended call has no SFU")
        XCTAssertEqual((get("/v1/connections")["connections"] as? [[String: Any]])?.first?["sessions"] as? [String], [])
    }
}

/// The response body as a JSON object (empty when it is not one).
func jsonObject(_ response: HTTPResponse) -> [String: Any] {
    (try? JSONSerialization.jsonObject(with: Data(response.body))) as? [String: Any] ?? [:]
}

/// A verifier that takes the token as the user id.
struct NameVerifier: TokenVerifier {
    func verify(_ token: String) async throws(SwitchboardError) -> UserToken {
        UserToken(userID: token, issuedAt: Date(), expiresAt: Date(timeIntervalSinceNow: 3600))
    }
}

