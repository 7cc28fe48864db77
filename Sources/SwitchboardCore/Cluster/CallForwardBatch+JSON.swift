import Foundation

/// A ``CallForwardBatch`` on the bus (ADR 0012): one JSON object,
/// `{"v":1,"requests":[…],"answers":[…],"notices":[…],"lost":[…],"moved":[…],"admin":[…]}`. A reader
/// skips members it does not know (a node of an older build drops `admin`: its asker gets no
/// answer and says the owner is silent), and refuses a batch whose members have the wrong
/// shape (`nil`).
extension CallForwardBatch {
    /// The wire's version; a reader refuses batches of a later one.
    public static let version = 1

    public func json() -> [UInt8] {
        var fields: [String: JSONValue] = ["v": .number(Double(Self.version))]
        if !requests.isEmpty { fields["requests"] = .array(requests.map(\.json)) }
        if !answers.isEmpty { fields["answers"] = .array(answers.map(\.json)) }
        if !notices.isEmpty { fields["notices"] = .array(notices.map(\.json)) }
        if !lostConnections.isEmpty { fields["lost"] = .array(lostConnections.map { .string($0.rawValue) }) }
        if !movedConnections.isEmpty { fields["moved"] = .array(movedConnections.map { .string($0.rawValue) }) }
        if !adminRequests.isEmpty { fields["admin"] = .array(adminRequests.map(\.json)) }
        return JSONValue.object(fields).bytes
    }

    public static func read(_ bytes: [UInt8]) -> CallForwardBatch? {
        guard let value = JSONValue.parse(bytes), value.isObject, let version = value["v"]?.doubleValue, version == Double(Self.version) else { return nil }
        var batch = CallForwardBatch()
        guard let requests = list(value["requests"], ForwardedCallRequest.init(json:)),
            let answers = list(value["answers"], ForwardedCallAnswer.init(json:)),
            let notices = list(value["notices"], CallNotice.init(forwarded:)),
            let lost = list(value["lost"], { $0.stringValue.map(ClientConnectionID.init) }),
            let moved = list(value["moved"], { $0.stringValue.map(ClientConnectionID.init) }),
            let admin = list(value["admin"], ForwardedAdminRequest.init(json:))
        else { return nil }
        batch.adminRequests = admin
        batch.movedConnections = moved
        batch.requests = requests
        batch.answers = answers
        batch.notices = notices
        batch.lostConnections = lost
        return batch
    }

    /// The elements of an optional array member, each read by `element`; `nil` when one fails.
    private static func list<T>(_ member: JSONValue?, _ element: (JSONValue) -> T?) -> [T]? {
        guard let member, member != .null else { return [] }
        guard let values = member.arrayValue else { return nil }
        var elements: [T] = []
        elements.reserveCapacity(values.count)
        for value in values {
            guard let read = element(value) else { return nil }
            elements.append(read)
        }
        return elements
    }
}

extension ForwardedCallRequest {
    var json: JSONValue {
        .object([
            "ticket": .string(ticket), "cid": .string(cid.cid), "owner": .string(owner.node), "generation": .number(Double(owner.generation)),
            "user": .string(actor.user.rawValue), "connection": .string(actor.connection.rawValue),
            "call_cids": actor.allowedCIDs.map { .array($0.sorted().map(JSONValue.string)) } ?? .null, "admin": .bool(actor.isAdmin),
            "remote": .string(remoteAddress), "frame": frame,
        ])
    }

    init?(json: JSONValue) {
        guard let ticket = json["ticket"]?.stringValue, let cid = json["cid"]?.stringValue.flatMap(CallCID.init(cid:)),
            let node = json["owner"]?.stringValue, let generation = json["generation"]?.int64Value,
            let user = json["user"]?.stringValue.flatMap(UserID.init), let connection = json["connection"]?.stringValue,
            let admin = json["admin"]?.boolValue, let remote = json["remote"]?.stringValue, let frame = json["frame"], frame.isObject
        else { return nil }
        var allowed: Set<String>?
        if let cids = json["call_cids"], cids != .null {
            guard let values = cids.arrayValue?.compactMap(\.stringValue), values.count == cids.arrayValue?.count else { return nil }
            allowed = Set(values)
        }
        self.init(
            ticket: ticket, cid: cid, owner: CallOwner(node: node, generation: generation),
            actor: CallActor(user: user, connection: ClientConnectionID(connection), allowedCIDs: allowed, isAdmin: admin), remoteAddress: remote,
            frame: frame)
    }
}

extension ForwardedAdminRequest {
    var json: JSONValue {
        var fields: [String: JSONValue] = [
            "ticket": .string(ticket), "cid": .string(cid.cid), "owner": .string(owner.node), "generation": .number(Double(owner.generation)),
        ]
        switch action {
        case .end: fields["action"] = .string("end")
        case .kick(let session):
            fields["action"] = .string("kick")
            fields["session"] = .string(session.rawValue)
        }
        return .object(fields)
    }

    init?(json: JSONValue) {
        guard let ticket = json["ticket"]?.stringValue, let cid = json["cid"]?.stringValue.flatMap(CallCID.init(cid:)),
            let node = json["owner"]?.stringValue, let generation = json["generation"]?.int64Value, let action = json["action"]?.stringValue
        else { return nil }
        switch (action, json["session"]?.stringValue) {
        case ("end", _): self.init(ticket: ticket, cid: cid, owner: CallOwner(node: node, generation: generation), action: .end)
        case ("kick", let session?):
            self.init(ticket: ticket, cid: cid, owner: CallOwner(node: node, generation: generation), action: .kick(SessionID(session)))
        default: return nil
        }
    }
}

extension ForwardedCallAnswer {
    var json: JSONValue {
        switch result {
        case .success(let data): .object(["ticket": .string(ticket), "data": data])
        case .failure(let error):
            .object(["ticket": .string(ticket), "error": .object(["code": .string(error.code.rawValue), "message": .string(error.message)])])
        }
    }

    init?(json: JSONValue) {
        guard let ticket = json["ticket"]?.stringValue else { return nil }
        if let error = json["error"] {
            guard let code = error["code"]?.stringValue, let message = error["message"]?.stringValue else { return nil }
            // A code this build does not know (a newer node's) keeps its text.
            let known = SwitchboardError.Code(rawValue: code)
            self.init(ticket: ticket, result: .failure(SwitchboardError(known ?? .internalError, known == nil ? "\(code): \(message)" : message)))
        } else if let data = json["data"] {
            self.init(ticket: ticket, result: .success(data))
        } else {
            return nil
        }
    }
}

extension CallNotice {
    var json: JSONValue {
        .object([
            "type": .string(type), "cid": .optional(cid?.cid), "data": data,
            "connections": .array(connections.sorted().map { .string($0.rawValue) }), "users": .array(users.sorted().map { .string($0.rawValue) }),
            "except": .optional(except?.rawValue),
        ])
    }

    init?(forwarded json: JSONValue) {
        guard let type = json["type"]?.stringValue, let data = json["data"], let connections = json["connections"]?.arrayValue,
            let users = json["users"]?.arrayValue
        else { return nil }
        var cid: CallCID?
        if let named = json["cid"], named != .null {
            guard let parsed = named.stringValue.flatMap(CallCID.init(cid:)) else { return nil }
            cid = parsed
        }
        let connectionIDs = connections.compactMap { $0.stringValue.map(ClientConnectionID.init) }
        let userIDs = users.compactMap { $0.stringValue.flatMap(UserID.init) }
        guard connectionIDs.count == connections.count, userIDs.count == users.count else { return nil }
        var except: ClientConnectionID?
        if let named = json["except"], named != .null {
            guard let value = named.stringValue else { return nil }
            except = ClientConnectionID(value)
        }
        self.init(type: type, cid: cid, data: data, connections: Set(connectionIDs), users: Set(userIDs), except: except)
    }
}
