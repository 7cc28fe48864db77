import Configuration
import Foundation
import SwitchboardTesting
import XCTest

/// A call-protocol (`/v1/connect`) client over a real socket, for the integration tests.
///
/// It authenticates with an `auth` frame, correlates requests with their one response frame,
/// keeps events that arrive in between in an inbox, and checks that every event's `seq` is
/// the previous one plus one (strictly increasing, no gap) on this socket.
final class CallTestClient {
    /// A request was answered with an error frame.
    struct RequestFailed: Error, CustomStringConvertible {
        let code: String
        let message: String
        var description: String { "error \(code): \(message)" }
    }

    /// The server closed the socket (or the TCP stream ended) while a frame was expected.
    struct Closed: Error, CustomStringConvertible {
        let code: UInt16?
        var reason = ""
        var description: String { "socket closed (\(code.map(String.init) ?? "no code") \(reason))" }
    }

    /// The server sent something the test did not expect at this point.
    struct Unexpected: Error, CustomStringConvertible {
        let frame: [String: Any]
        var description: String { "unexpected frame \(frame)" }
    }

    let name: String
    private var socket: WebSocketTestClient?
    /// `data` of `connection.ok`.
    private(set) var ok: [String: Any] = [:]
    /// Frames received while waiting for something else and not consumed yet, in order.
    private(set) var inbox: [[String: Any]] = []
    /// The `seq` of the last event received (or the `last_seq` a resume presented).
    private(set) var lastSeq: Int = 0
    /// Every event must be numbered exactly `lastSeq + 1` (false after an incomplete replay).
    var gapless = true
    private var nextRequestID = 1

    var connectionID: String { ok["connection_id"] as? String ?? "" }
    var resumeToken: String { ok["resume_token"] as? String ?? "" }
    var userID: String { ok["user_id"] as? String ?? "" }
    var sessions: [String] { ok["sessions"] as? [String] ?? [] }

    private init(name: String, socket: WebSocketTestClient) {
        self.name = name
        self.socket = socket
    }

    /// Opens a socket on `/v1/connect` without authenticating.
    static func open(_ daemon: TestDaemon, name: String = "client", query: String = "", headers: [String: String] = [:]) throws -> CallTestClient {
        let socket = try WebSocketTestClient.connect(port: daemon.port, path: "/v1/connect" + query, headers: headers)
        return CallTestClient(name: name, socket: socket)
    }

    /// Opens a socket and authenticates with `{"type":"auth","token":…}` (resuming when
    /// `resume` is given); returns once `connection.ok` arrived.
    static func connect(_ daemon: TestDaemon, token: String, name: String = "client", resume: (token: String, lastSeq: Int)? = nil) throws -> CallTestClient {
        let client = try open(daemon, name: name)
        var auth: [String: Any] = ["type": "auth", "token": token]
        if let resume {
            auth["resume_token"] = resume.token
            auth["last_seq"] = resume.lastSeq
            client.lastSeq = resume.lastSeq
        }
        try client.send(auth)
        try client.awaitConnectionOK()
        return client
    }

    /// Reads `connection.ok` (after an auth frame, or a token in the header or query).
    func awaitConnectionOK() throws {
        let frame = try rawNext()
        guard frame["type"] as? String == "connection.ok", let data = frame["data"] as? [String: Any] else { throw Unexpected(frame: frame) }
        ok = data
        gapless = data["replay_complete"] as? Bool ?? true
    }

    // MARK: - Sending

    func send(_ object: [String: Any]) throws {
        try sendText(String(decoding: try JSONSerialization.data(withJSONObject: object, options: [.sortedKeys]), as: UTF8.self))
    }

    func sendText(_ text: String) throws {
        guard let socket else { throw Closed(code: nil) }
        try socket.send(text)
    }

    /// Sends `{"id":N,"type":type,"data":data}` and returns the response's `data`; events that
    /// arrive first go to the inbox. An error frame throws ``RequestFailed``.
    @discardableResult
    func request(_ type: String, _ data: [String: Any] = [:], timeout: Duration = .seconds(5)) throws -> [String: Any] {
        let id = nextRequestID
        nextRequestID += 1
        try send(["id": id, "type": type, "data": data])
        let deadline = ContinuousClock.now + timeout
        while true {
            let frame = try next(timeout: deadline - ContinuousClock.now)
            guard let frameID = jsonInt(frame["id"]), frameID == id, frame["seq"] == nil else {
                inbox.append(frame)
                continue
            }
            switch frame["type"] as? String {
            case "response": return frame["data"] as? [String: Any] ?? [:]
            case "pong": return [:]
            case "error":
                let error = frame["error"] as? [String: Any] ?? [:]
                throw RequestFailed(code: error["code"] as? String ?? "", message: error["message"] as? String ?? "")
            default: throw Unexpected(frame: frame)
            }
        }
    }

    /// The error code a request is answered with; fails the test when it succeeds.
    func requestError(_ type: String, _ data: [String: Any] = [:], file: StaticString = #filePath, line: UInt = #line) throws -> String? {
        do {
            let result = try request(type, data)
            XCTFail("\(name): \(type) succeeded with \(result), expected an error", file: file, line: line)
            return nil
        } catch let failure as RequestFailed {
            return failure.code
        }
    }

    /// A `ping` round trip: every frame the server queued for this socket before it is now in
    /// the inbox.
    func ping() throws {
        try request("ping")
    }

    // MARK: - Receiving

    /// The next event of `type` (from the inbox first); events of other types stay in the inbox.
    @discardableResult
    func event(_ type: String, timeout: Duration = .seconds(5), file: StaticString = #filePath, line: UInt = #line) throws -> [String: Any] {
        if let index = inbox.firstIndex(where: { $0["type"] as? String == type && $0["seq"] != nil }) {
            return inbox.remove(at: index)
        }
        let deadline = ContinuousClock.now + timeout
        while true {
            let remaining = deadline - ContinuousClock.now
            guard remaining > .zero else {
                XCTFail("\(name): no \(type) event; inbox: \(inbox.map { $0["type"] ?? "?" })", file: file, line: line)
                throw Unexpected(frame: ["waiting_for": type])
            }
            let frame: [String: Any]
            do {
                frame = try next(timeout: remaining)
            } catch let error as Closed {
                XCTFail("\(name): closed (\(error)) while waiting for \(type); inbox: \(inbox.map { $0["type"] ?? "?" })", file: file, line: line)
                throw error
            }
            if frame["type"] as? String == type, frame["seq"] != nil { return frame }
            inbox.append(frame)
        }
    }

    /// Takes every frame in the inbox, after a ping round trip.
    func takeInbox() throws -> [[String: Any]] {
        try ping()
        defer { inbox.removeAll() }
        return inbox
    }

    /// The types of the events still in the inbox after a ping round trip (the inbox is kept).
    func pendingTypes() throws -> [String] {
        try ping()
        return inbox.compactMap { $0["type"] as? String }
    }

    /// The next frame from the socket (not the inbox); events are checked for `seq` order.
    func next(timeout: Duration = .seconds(5)) throws -> [String: Any] {
        let frame = try rawNext(timeout: timeout)
        if let seq = jsonInt(frame["seq"]) {
            if gapless {
                XCTAssertEqual(seq, lastSeq + 1, "\(name): event \(frame["type"] ?? "?") out of sequence")
            } else {
                XCTAssertGreaterThan(seq, lastSeq, "\(name): event \(frame["type"] ?? "?") out of sequence")
            }
            lastSeq = seq
        }
        return frame
    }

    private func rawNext(timeout: Duration = .seconds(5)) throws -> [String: Any] {
        guard let socket else { throw Closed(code: nil) }
        let frame = try socket.next(timeout: timeout)
        switch frame {
        case .close(let code, let reason): throw Closed(code: code, reason: reason)
        case .text(let text):
            guard let object = try JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any] else {
                throw Unexpected(frame: ["text": text])
            }
            return object
        case .binary(let bytes): throw Unexpected(frame: ["binary": bytes.count])
        }
    }

    /// Reads until the server closes; returns the frames before the close and its code.
    func awaitClose(timeout: Duration = .seconds(5)) throws -> (frames: [[String: Any]], code: UInt16?) {
        let (frames, closed) = try awaitCloseFrame(timeout: timeout)
        return (frames, closed.code)
    }

    /// Reads until the server closes; returns the frames before the close and the close.
    func awaitCloseFrame(timeout: Duration = .seconds(5)) throws -> (frames: [[String: Any]], close: Closed) {
        let deadline = ContinuousClock.now + timeout
        var frames: [[String: Any]] = []
        while true {
            do {
                frames.append(try next(timeout: deadline - ContinuousClock.now))
            } catch let closed as Closed {
                return (frames, closed)
            }
        }
    }

    /// Reads frames until `date`, keeping events in the inbox; fails if the socket closes.
    func expectSilence(until date: Date, file: StaticString = #filePath, line: UInt = #line) throws {
        while date.timeIntervalSinceNow > 0 {
            do {
                inbox.append(try next(timeout: .milliseconds(Int(date.timeIntervalSinceNow * 1000) + 1)))
            } catch let closed as Closed {
                XCTFail("\(name): closed (\(closed)) before \(date)", file: file, line: line)
                throw closed
            } catch let unexpected as Unexpected {
                throw unexpected
            } catch {
                // Timed out waiting for a frame: silence, as expected.
            }
        }
    }

    /// Drops the TCP connection without a close frame, as a device losing its network does.
    func drop() {
        socket = nil
    }
}

// MARK: - JSON helpers

func jsonInt(_ value: Any?) -> Int? {
    if let value = value as? Int { return value }
    if let value = value as? Double, value == value.rounded() { return Int(value) }
    if let value = value as? NSNumber { return value.intValue }
    return nil
}

func jsonObject(_ value: Any?, file: StaticString = #filePath, line: UInt = #line) -> [String: Any] {
    guard let object = value as? [String: Any] else {
        XCTFail("not an object: \(String(describing: value))", file: file, line: line)
        return [:]
    }
    return object
}

func jsonObjects(_ value: Any?, file: StaticString = #filePath, line: UInt = #line) -> [[String: Any]] {
    guard let array = value as? [[String: Any]] else {
        XCTFail("not an array of objects: \(String(describing: value))", file: file, line: line)
        return []
    }
    return array
}

/// `data.call.ended_reason` etc.: walks keys through nested objects.
func jsonAt(_ value: Any?, _ keys: String...) -> Any? {
    var current = value
    for key in keys { current = (current as? [String: Any])?[key] }
    return current
}

extension TestDaemon {
    static let callSecret = String(repeating: "call-protocol-secret-", count: 2)
    static let callAdminToken = "call-admin-token"

    /// A daemon with user tokens enabled and an admin token, plus `overrides`; its call hub
    /// reads `wallClock` when one is given.
    static func calls(_ overrides: [String: ConfigContent] = [:], wallClock: ManualWallClock? = nil) throws -> TestDaemon {
        var values: [String: ConfigContent] = ["auth.api_secret": .string(callSecret), "admin.token": .string(callAdminToken)]
        values.merge(overrides) { _, new in new }
        return try TestDaemon(values, wallClock: wallClock)
    }

    /// Mints a user token through `POST /v1/tokens`.
    func mintToken(user: String, ttlSeconds: Int = 600, role: String? = nil, callCIDs: [String]? = nil, file: StaticString = #filePath, line: UInt = #line) throws -> String {
        var body: [String: Any] = ["user_id": user, "ttl_seconds": ttlSeconds]
        if let role { body["role"] = role }
        if let callCIDs { body["call_cids"] = callCIDs }
        let response = try admin("POST", "/v1/tokens", token: Self.callAdminToken, body: Array(try JSONSerialization.data(withJSONObject: body)))
        XCTAssertEqual(response.status, 201, response.text, file: file, line: line)
        return try XCTUnwrap((response.json as? [String: Any])?["token"] as? String, file: file, line: line)
    }

    /// Connects `user` with a freshly minted token.
    func callClient(_ user: String, name: String? = nil) throws -> CallTestClient {
        try CallTestClient.connect(self, token: try mintToken(user: user), name: name ?? user)
    }
}

extension TestDaemon {
    /// `GET` on the admin API with the admin token; the decoded JSON object of a 200.
    func adminGET(_ path: String, file: StaticString = #filePath, line: UInt = #line) throws -> [String: Any] {
        let response = try admin("GET", path, token: Self.callAdminToken)
        XCTAssertEqual(response.status, 200, "GET \(path): \(response.text)", file: file, line: line)
        return response.json as? [String: Any] ?? [:]
    }

    /// `GET /v1/calls/{type}/{id}`: the stored call, members, sessions and events.
    func storedCall(_ type: String, _ id: String, file: StaticString = #filePath, line: UInt = #line) throws -> [String: Any] {
        try adminGET("/v1/calls/\(type)/\(id)?events=1000", file: file, line: line)
    }

    /// `GET /v1/connections`.
    func connectionList(file: StaticString = #filePath, line: UInt = #line) throws -> [[String: Any]] {
        try adminGET("/v1/connections", file: file, line: line)["connections"] as? [[String: Any]] ?? []
    }
}

/// Polls `condition` every 10 ms until it holds; fails the test after `timeout`.
func waitUntil(
    _ what: String, timeout: Duration = .seconds(5), file: StaticString = #filePath, line: UInt = #line, _ condition: () throws -> Bool
) rethrows {
    let deadline = ContinuousClock.now + timeout
    while try !condition() {
        guard ContinuousClock.now < deadline else {
            XCTFail("timed out waiting until \(what)", file: file, line: line)
            return
        }
        usleep(10_000)
    }
}

/// Milliseconds since 1970, as the call protocol writes times.
func milliseconds(_ date: Date = Date()) -> Int { Int((date.timeIntervalSince1970 * 1000).rounded()) }

/// The user ids of a state's `participants`, in the order given.
func participantUsers(_ state: [String: Any], file: StaticString = #filePath, line: UInt = #line) -> [String] {
    jsonObjects(state["participants"], file: file, line: line).compactMap { $0["user_id"] as? String }
}

/// The session ids of a state's `participants`, in the order given.
func participantSessions(_ state: [String: Any], file: StaticString = #filePath, line: UInt = #line) -> [String] {
    jsonObjects(state["participants"], file: file, line: line).compactMap { $0["session_id"] as? String }
}

/// `user:ring_state[:ring_reason]` for each member of a state or stored call.
func memberStates(_ state: [String: Any], file: StaticString = #filePath, line: UInt = #line) -> [String] {
    jsonObjects(state["members"], file: file, line: line).map { member in
        var text = "\(member["user_id"] as? String ?? "?"):\(member["ring_state"] as? String ?? "?")"
        if let reason = member["ring_reason"] as? String { text += ":\(reason)" }
        return text
    }
}
