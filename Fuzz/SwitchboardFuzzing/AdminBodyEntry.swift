import Foundation
import Logging
import SwitchboardAdmin
import SwitchboardApp
import SwitchboardCore
import SwitchboardTesting

/// The admin API: ``AdminRouter/respond(to:)`` over a fresh ``InMemoryAdminContext`` (and, for
/// the call routes, a ``CallHub`` over a seeded in-memory store) per input.
///
/// Two input forms:
/// - a script, one request per line: `[-|=TOKEN ]METHOD /path[?query] [BODY]` — `-` sends no
///   credential, `=TOKEN` sends `Bearer TOKEN`, otherwise the admin token is sent;
/// - anything else is a body, sent to every route that reads one (PUT /v1/log-level,
///   POST /v1/sfus, PUT /v1/sfus/{id}, both heartbeat credentials, POST /v1/placement/explain,
///   POST /v1/tokens).
///
/// A finding: any 5xx but 503 (`unavailable`), or a JSON response whose body is not JSON.
enum AdminBodyEntry {
    static let adminToken = "admin-token"
    static let sfuSecret = "0123456789abcdef"
    static let regions = RegionTable.builtin
    static let seedSFU = #"{"id":"sfu-a","url":"wss://a.example/ws","region":"fra","capacity":10,"secret":"0123456789abcdef"}"#

    /// The routes that decode a JSON body, with the credential to send.
    static let bodyRoutes: [(method: String, path: String, bearer: String?)] = [
        ("PUT", "/v1/log-level", adminToken),
        ("POST", "/v1/sfus", adminToken),
        ("PUT", "/v1/sfus/sfu-a", adminToken),
        ("POST", "/v1/sfus/sfu-a/heartbeat", adminToken),
        ("POST", "/v1/sfus/sfu-a/heartbeat", sfuSecret),
        ("POST", "/v1/placement/explain", adminToken),
        ("POST", "/v1/tokens", adminToken),
    ]

    static func run(_ bytes: [UInt8]) -> FuzzFinding? {
        let context = InMemoryAdminContext(peers: ["alice", "bob", "carol"], regions: regions)
        let router = AdminRoutes.router(configuration: AdminConfiguration(token: adminToken), context: context)
        var hub: CallHub?
        defer { hub?.stop() }
        var requests: [HTTPRequest] = []
        let lines = bytes.split(separator: UInt8(ascii: "\n"), omittingEmptySubsequences: true).prefix(FuzzScript.maximumSteps)
        if let first = lines.first, request(first) != nil {
            requests = lines.compactMap(request)
        } else {
            requests.append(HTTPRequest(method: "POST", path: "/v1/sfus", headers: bearer(adminToken), body: Array(seedSFU.utf8), listener: .admin))
            for route in bodyRoutes {
                requests.append(HTTPRequest(method: route.method, path: route.path, headers: bearer(route.bearer), body: bytes, remoteAddress: "127.0.0.1", listener: .admin))
            }
        }
        for request in requests {
            if hub == nil, request.path.hasPrefix("/v1/calls") || request.path.hasPrefix("/v1/connections") {
                hub = callHub()
                context.calls = hub
            }
            let response = router.respond(to: request)
            FuzzTrace.print("\(request.method) \(request.path) \(request.query) \(FuzzTrace.text(request.body))\n  -> \(response.status) \(FuzzTrace.text(response.body))")
            if let finding = check(response, for: request) { return finding }
        }
        return nil
    }

    static func check(_ response: HTTPResponse, for request: HTTPRequest) -> FuzzFinding? {
        let summary = "\(request.method) \(request.path) body \(String(decoding: request.body.prefix(200), as: UTF8.self))"
        if response.status >= 500, response.status != 503 {
            return FuzzFinding("\(response.status) for \(summary): \(String(decoding: response.body.prefix(300), as: UTF8.self))")
        }
        if response.contentType?.hasPrefix("application/json") == true, (try? JSONSerialization.jsonObject(with: Data(response.body))) == nil {
            return FuzzFinding("a JSON response that is not JSON for \(summary): \(String(decoding: response.body.prefix(300), as: UTF8.self))")
        }
        return nil
    }

    static func bearer(_ token: String?) -> [String: String] {
        token.map { ["authorization": "Bearer \($0)"] } ?? [:]
    }

    /// One script line as a request; `nil` when it is not `[-|=TOKEN ]METHOD /path…`.
    static func request(_ line: ArraySlice<UInt8>) -> HTTPRequest? {
        var rest = line
        var headers = bearer(adminToken)
        if rest.first == UInt8(ascii: "-") {
            headers = [:]
            rest = rest.dropFirst()
        } else if rest.first == UInt8(ascii: "=") {
            let token = rest.dropFirst().prefix { $0 != UInt8(ascii: " ") }
            headers = bearer(String(decoding: token, as: UTF8.self))
            rest = rest.dropFirst(token.count + 2)
        }
        let words = rest.split(separator: UInt8(ascii: " "), maxSplits: 2, omittingEmptySubsequences: false)
        guard words.count >= 2, (1...7).contains(words[0].count), words[0].allSatisfy({ $0 >= 0x41 && $0 <= 0x5A }),
            words[1].first == UInt8(ascii: "/")
        else { return nil }
        let target = String(decoding: words[1], as: UTF8.self)
        let (path, query) = split(target)
        return HTTPRequest(
            method: String(decoding: words[0], as: UTF8.self), path: path, query: query, headers: headers,
            body: words.count > 2 ? Array(words[2]) : [], remoteAddress: "127.0.0.1", listener: .admin)
    }

    /// Path and query, percent-decoded as the transport hands them over.
    static func split(_ target: String) -> (String, [String: String]) {
        let parts = target.split(separator: "?", maxSplits: 1, omittingEmptySubsequences: false)
        let path = String(parts[0]).removingPercentEncoding ?? String(parts[0])
        var query: [String: String] = [:]
        if parts.count > 1 {
            for pair in parts[1].split(separator: "&") {
                let nameValue = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
                let name = String(nameValue[0]).removingPercentEncoding ?? String(nameValue[0])
                let value = nameValue.count > 1 ? (String(nameValue[1]).removingPercentEncoding ?? String(nameValue[1])) : ""
                query[name] = value
            }
        }
        return (path, query)
    }

    // MARK: - Calls

    static let t0 = Date(timeIntervalSince1970: 1_800_000_000)

    /// A hub over a store holding a live call (`default:standup`, alice in it) and an ended one
    /// (`default:retro`), on a fixed clock.
    static func callHub() -> CallHub? {
        let store = InMemoryCallStore()
        let standup = CallCID(type: "default", id: "standup")!
        let retro = CallCID(type: "default", id: "retro")!
        let alice = UserID("alice")!
        let connection = ClientConnectionID("c-alice")
        let seed: [CallMutation] = [
            .saveCall(CallRecord(cid: retro, createdBy: alice, createdAt: t0, endedAt: t0.addingTimeInterval(1), endedReason: .empty)),
            .saveCall(CallRecord(cid: standup, createdBy: alice, createdAt: t0.addingTimeInterval(2))),
            .saveMember(MemberRecord(cid: retro, userID: alice, addedAt: t0)),
            .saveMember(MemberRecord(cid: standup, userID: alice, addedAt: t0.addingTimeInterval(2))),
            .saveConnection(ConnectionRecord(id: connection, userID: alice, resumeToken: "r-alice", connectedAt: t0, tokenExpiresAt: t0.addingTimeInterval(3600))),
            .saveSession(
                SessionRecord(
                    sessionID: SessionID("s-alice"), cid: standup, callSession: 1, userID: alice, connection: connection, role: .initiator,
                    joinedAt: t0.addingTimeInterval(3))),
            .appendEvent(CallEventRecord(cid: standup, callSession: 1, at: t0.addingTimeInterval(2), type: "call.created", payload: .object([:]))),
        ]
        let now = t0.addingTimeInterval(10)
        let hub = CallHub(
            queue: DispatchQueue(label: "fuzz.calls"), configuration: CallConfiguration(), store: store, placement: CallFrameEntry.Placer(),
            tokenVerifier: nil, wallClock: { now }, newID: { "fuzz-id" }, logger: Logger(label: "fuzz", factory: { _ in SwiftLogNoOpLogHandler() }))
        do {
            try store.apply(seed)
            try hub.start(transport: InMemoryTransport())
        } catch {
            return nil
        }
        return hub
    }
}
