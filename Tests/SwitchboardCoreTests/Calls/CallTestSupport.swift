import Foundation
import SwitchboardCore
import XCTest

/// Fixtures shared by the call-protocol tests: a fixed base time advanced by hand, users,
/// cids and actors (one connection per user and device).
enum CallFixture {
    /// "Now" at the start of every test.
    static let base = Date(timeIntervalSince1970: 1_700_000_000)

    /// `seconds` after ``base``.
    static func at(_ seconds: TimeInterval) -> Date { base.addingTimeInterval(seconds) }

    static func user(_ name: String) -> UserID { UserID(name)! }

    static func cid(_ type: String, _ id: String) -> CallCID { CallCID(type: type, id: id)! }

    static func connection(_ user: String, _ device: String = "1") -> ClientConnectionID { ClientConnectionID("\(user)/\(device)") }

    /// `user` on `device`; connection `user/device`.
    static func actor(_ user: String, device: String = "1", admin: Bool = false, cids: Set<String>? = nil) -> CallActor {
        CallActor(user: Self.user(user), connection: connection(user, device), allowedCIDs: cids, isAdmin: admin)
    }

    static let sfu = SFUAssignment(id: "sfu-fra-1", url: "wss://sfu-fra-1.example/sfu", region: "fra")

    /// The ringing type with its timeouts changed.
    static func ringing(incoming: Int = 30, autoCancel: Int = 30, busy: CallTypeSettings.BusyPolicy = .reject, max: Int = 10) -> CallTypeSettings {
        var settings = CallTypeSettings.ringingCall
        settings.incomingTimeout = .seconds(incoming)
        settings.autoCancelTimeout = .seconds(autoCancel)
        settings.busyPolicy = busy
        settings.maxParticipants = max
        return settings
    }

    /// The default configuration with the ringing type replaced.
    static func configuration(ringing: CallTypeSettings = .ringingCall, meeting: CallTypeSettings = .meeting) -> CallConfiguration {
        CallConfiguration(types: ["default": meeting, "ringing": ringing])
    }
}

/// Ids `prefix-1`, `prefix-2`, … in order.
final class SequentialIDs {
    let prefix: String
    private(set) var issued = 0

    init(prefix: String = "id") { self.prefix = prefix }

    func next() -> String {
        issued += 1
        return "\(prefix)-\(issued)"
    }
}

/// A placer that answers with a fixed SFU (or error) and records what it was asked.
final class FakePlacer: CallPlacer {
    var assignment: SFUAssignment? = CallFixture.sfu
    var error: SwitchboardError?
    private(set) var requests: [(cid: CallCID, participants: [LocationHint], current: SFUAssignment?)] = []

    func place(
        _ cid: CallCID, participants: [LocationHint], current: SFUAssignment?, now: Date, out: inout CallOutput
    ) throws(SwitchboardError) -> SFUAssignment? {
        requests.append((cid, participants, current))
        if let error { throw error }
        return assignment
    }
}

/// Fails the test unless `body` throws a ``SwitchboardError`` with `code`.
func assertCallError<T>(_ code: SwitchboardError.Code, file: StaticString = #filePath, line: UInt = #line, _ body: () throws -> T) {
    do {
        let value = try body()
        XCTFail("expected \(code), got \(value)", file: file, line: line)
    } catch let error as SwitchboardError {
        XCTAssertEqual(error.code, code, error.message, file: file, line: line)
    } catch {
        XCTFail("expected \(code), got \(error)", file: file, line: line)
    }
}

/// A ``CallEngine`` driven by hand: time moves only through ``advance(_:)``, and `last` holds
/// the output of the most recent operation (also when it threw).
struct EngineHarness {
    var engine: CallEngine
    let ids = SequentialIDs(prefix: "s")
    let placer = FakePlacer()
    var now = CallFixture.base
    var last = CallOutput()

    init(_ configuration: CallConfiguration = CallConfiguration()) {
        engine = CallEngine(configuration: configuration)
    }

    mutating func advance(_ seconds: TimeInterval) { now = now.addingTimeInterval(seconds) }

    func call(_ cid: CallCID) -> LiveCall? { engine.call(cid) }

    func member(_ user: String, of cid: CallCID) -> MemberRecord? { engine.call(cid)?.members[CallFixture.user(user)] }

    @discardableResult
    mutating func getOrCreate(
        _ cid: CallCID, members: [String] = [], ring: Bool = false, custom: JSONValue = .object([:]), by actor: CallActor
    ) throws(SwitchboardError) -> JSONValue {
        last = CallOutput()
        return try engine.getOrCreate(cid, members: members.map(CallFixture.user), ring: ring, custom: custom, by: actor, now: now, out: &last)
    }

    /// Joins and returns the new session id.
    @discardableResult
    mutating func join(
        _ cid: CallCID, by actor: CallActor, create: Bool = false, ring: Bool = false, members: [String] = [], location: LocationHint? = nil
    ) throws(SwitchboardError) -> SessionID {
        let result = try joinResult(cid, by: actor, create: create, ring: ring, members: members, location: location)
        return SessionID(result["session_id"]!.stringValue!)
    }

    mutating func joinResult(
        _ cid: CallCID, by actor: CallActor, create: Bool = false, ring: Bool = false, members: [String] = [], location: LocationHint? = nil
    ) throws(SwitchboardError) -> JSONValue {
        last = CallOutput()
        return try engine.join(
            cid, create: create, ring: ring, members: members.map(CallFixture.user), location: location, by: actor, placer: placer,
            newID: ids.next, now: now, out: &last)
    }

    @discardableResult
    mutating func invite(_ cid: CallCID, _ members: [String], by actor: CallActor) throws(SwitchboardError) -> JSONValue {
        last = CallOutput()
        return try engine.invite(cid, members: members.map(CallFixture.user), by: actor, now: now, out: &last)
    }

    @discardableResult
    mutating func accept(_ cid: CallCID, by actor: CallActor) throws(SwitchboardError) -> JSONValue {
        last = CallOutput()
        return try engine.accept(cid, by: actor, now: now, out: &last)
    }

    @discardableResult
    mutating func reject(_ cid: CallCID, reason: RejectReason = .decline, by actor: CallActor) throws(SwitchboardError) -> JSONValue {
        last = CallOutput()
        return try engine.reject(cid, reason: reason, by: actor, now: now, out: &last)
    }

    @discardableResult
    mutating func leave(_ cid: CallCID, session: SessionID? = nil, by actor: CallActor) throws(SwitchboardError) -> JSONValue {
        last = CallOutput()
        return try engine.leave(cid, session: session, by: actor, now: now, out: &last)
    }

    @discardableResult
    mutating func end(_ cid: CallCID, by actor: CallActor) throws(SwitchboardError) -> JSONValue {
        last = CallOutput()
        return try engine.end(cid, by: actor, now: now, out: &last)
    }

    @discardableResult
    mutating func endByAdmin(_ cid: CallCID) throws(SwitchboardError) -> JSONValue {
        last = CallOutput()
        return try engine.endByAdmin(cid, now: now, out: &last)
    }

    mutating func kick(_ session: SessionID, from cid: CallCID) throws(SwitchboardError) {
        last = CallOutput()
        try engine.kick(session, from: cid, now: now, out: &last)
    }

    @discardableResult
    mutating func update(_ cid: CallCID, _ update: MediaUpdate, session: SessionID? = nil, by actor: CallActor) throws(SwitchboardError) -> JSONValue {
        last = CallOutput()
        return try engine.updateParticipant(cid, session: session, update: update, by: actor, now: now, out: &last)
    }

    @discardableResult
    mutating func signal(
        from session: SessionID? = nil, to target: SessionID, kind: SignalKind = .offer, payload: JSONValue = .string("v=0"), by actor: CallActor
    ) throws(SwitchboardError) -> JSONValue {
        last = CallOutput()
        return try engine.signal(from: session, to: target, kind: kind, payload: payload, by: actor, out: &last)
    }

    mutating func tick() {
        last = CallOutput()
        engine.tick(now: now, out: &last)
    }
}

extension CallOutput {
    /// Notices of one type, in order.
    func notices(_ type: String) -> [CallNotice] { notices.filter { $0.type == type } }

    /// The only notice of `type`; fails the test when there is not exactly one.
    func notice(_ type: String, file: StaticString = #filePath, line: UInt = #line) -> CallNotice? {
        let found = notices(type)
        XCTAssertEqual(found.count, 1, "notices of type \(type) in \(notices.map(\.type))", file: file, line: line)
        return found.first
    }

    var noticeTypes: [String] { notices.map(\.type) }

    var savedCalls: [CallRecord] {
        mutations.compactMap { if case .saveCall(let record) = $0 { record } else { nil } }
    }

    var savedMembers: [MemberRecord] {
        mutations.compactMap { if case .saveMember(let record) = $0 { record } else { nil } }
    }

    var savedSessions: [SessionRecord] {
        mutations.compactMap { if case .saveSession(let record) = $0 { record } else { nil } }
    }

    /// The types of the call-log entries appended, in order.
    var loggedEvents: [String] {
        mutations.compactMap { if case .appendEvent(let event) = $0 { event.type } else { nil } }
    }
}

extension CallNotice {
    /// A string member of the notice's data.
    func string(_ key: String) -> String? { data[key]?.stringValue }
}

/// One authenticated device in a ``GatewayHarness``.
struct Device {
    var socket: ConnectionID
    var connection: ClientConnectionID
    var resumeToken: String
    /// The `data` of its `connection.ok`.
    var ok: JSONValue
}

/// A ``CallGateway`` driven by hand, with tokens "verified" by the test.
struct GatewayHarness {
    var gateway: CallGateway
    let ids: SequentialIDs
    let placer = FakePlacer()
    var now = CallFixture.base
    /// The output of the most recent step.
    var last = CallGatewayOutput()
    private var socketSerial: UInt64 = 0

    /// `idPrefix` names its ids (two harnesses standing for two nodes need different ones).
    init(_ configuration: CallConfiguration = CallConfiguration(), idPrefix: String = "id") {
        gateway = CallGateway(configuration: configuration)
        ids = SequentialIDs(prefix: idPrefix)
    }

    mutating func advance(_ seconds: TimeInterval) { now = now.addingTimeInterval(seconds) }

    /// A verified token for `user`.
    func token(_ user: String, expiresIn: TimeInterval = 3600, role: String? = nil, cids: [String]? = nil) -> UserToken {
        UserToken(userID: user, issuedAt: now, expiresAt: now.addingTimeInterval(expiresIn), callCIDs: cids, role: role)
    }

    mutating func openSocket(token: String? = nil, resume: ResumeRequest? = nil, from address: String? = nil) -> ConnectionID {
        socketSerial += 1
        let socket = ConnectionID(rawValue: socketSerial)
        last = CallGatewayOutput()
        gateway.socketOpened(socket, token: token, resume: resume, remoteAddress: address ?? "198.51.100.\(socketSerial)", now: now, into: &last)
        return socket
    }

    mutating func send(_ socket: ConnectionID, _ text: String) {
        last = CallGatewayOutput()
        gateway.frameReceived(socket, Array(text.utf8), placer: placer, newID: ids.next, now: now, into: &last)
    }

    /// Sends a request and returns the frame that answers it (`response` or `error`).
    @discardableResult
    mutating func request(_ socket: ConnectionID, _ id: String, _ type: String, _ data: String = "{}") -> JSONValue? {
        send(socket, #"{"id":"\#(id)","type":"\#(type)","data":\#(data)}"#)
        return last.frames(to: socket).first { $0["id"] == .string(id) }
    }

    mutating func answer(_ check: TokenCheck, _ result: Result<UserToken, SwitchboardError>, namedUser: String? = nil) {
        last = CallGatewayOutput()
        gateway.tokenChecked(check.socket, purpose: check.purpose, result: result, namedUser: namedUser, now: now, newID: ids.next, into: &last)
    }

    mutating func tick() {
        last = CallGatewayOutput()
        gateway.tick(now: now, into: &last)
    }

    mutating func closeSocket(_ socket: ConnectionID) { gateway.socketClosed(socket, now: now) }

    /// Opens a socket, sends `auth` and answers the token check with `token`; `last` then
    /// holds the output of the answer (connection.ok and any pending rings).
    mutating func connect(
        _ user: String, token: UserToken? = nil, resume: ResumeRequest? = nil, file: StaticString = #filePath, line: UInt = #line
    ) -> Device? {
        let socket = openSocket()
        var frame = #"{"id":"auth","type":"auth","token":"token-of-\#(user)""#
        if let resume { frame += #","resume_token":"\#(resume.token)","last_seq":\#(resume.lastSeq)"# }
        send(socket, frame + "}")
        guard let check = last.tokenChecks.first else {
            XCTFail("no token check for \(user)", file: file, line: line)
            return nil
        }
        answer(check, .success(token ?? self.token(user)))
        guard let ok = last.frames(to: socket).first(where: { $0["type"] == .string("connection.ok") })?["data"],
            let id = ok["connection_id"]?.stringValue, let resumeToken = ok["resume_token"]?.stringValue
        else {
            XCTFail("no connection.ok for \(user): \(last.frames(to: socket))", file: file, line: line)
            return nil
        }
        return Device(socket: socket, connection: ClientConnectionID(id), resumeToken: resumeToken, ok: ok)
    }
}

extension CallGatewayOutput {
    /// Every frame sent to `socket`, parsed, in order.
    func frames(to socket: ConnectionID) -> [JSONValue] {
        commands.compactMap { command in
            guard case .send(let target, let bytes) = command, target == socket else { return nil }
            return JSONValue.parse(bytes)
        }
    }

    /// The event frames (those with a `seq`) sent to `socket`.
    func events(to socket: ConnectionID) -> [JSONValue] { frames(to: socket).filter { $0["seq"] != nil } }

    /// The `type` of each event sent to `socket`.
    func eventTypes(to socket: ConnectionID) -> [String] { events(to: socket).compactMap { $0["type"]?.stringValue } }

    /// The `seq` of each event sent to `socket`.
    func seqs(to socket: ConnectionID) -> [Int] { events(to: socket).compactMap { $0["seq"]?.doubleValue.map { Int($0) } } }

    /// The closes of `socket`, as code and reason.
    func closes(of socket: ConnectionID) -> [(code: CloseCode, reason: String)] {
        commands.compactMap { command in
            guard case .close(let target, let code, let reason) = command, target == socket else { return nil }
            return (code, reason)
        }
    }

    /// Every socket that was sent anything.
    var sendTargets: Set<ConnectionID> {
        Set(commands.compactMap { if case .send(let socket, _) = $0 { socket } else { nil } })
    }
}

extension JSONValue {
    /// The error code of an error frame.
    var errorCode: String? { self["error"]?["code"]?.stringValue }

    /// Parses test text; traps on bad JSON (a fixture mistake).
    static func from(_ text: String) -> JSONValue { parse(Array(text.utf8))! }
}
