extension ClientFrame {
    /// Parses one text frame. A frame that is not a JSON object with a string `type` fails with
    /// `invalid_request` and an id of `.null`; anything after that carries the frame's `id`.
    public static func parse(_ bytes: [UInt8], maxCustomBytes: Int) -> Result<ClientFrame, ParseFailure> {
        guard let root = JSONValue.parse(bytes), root.isObject else {
            return .failure(ParseFailure(id: .null, error: SwitchboardError(.invalidRequest, "a frame must be a JSON object")))
        }
        let id = root["id"] ?? .null
        switch id {
        case .null, .string, .number: break
        default: return .failure(ParseFailure(id: .null, error: SwitchboardError(.invalidRequest, "id must be a string or a number")))
        }
        guard let type = root["type"]?.stringValue else {
            return .failure(ParseFailure(id: id, error: SwitchboardError(.invalidRequest, "type must be a string")))
        }
        do {
            var fields = Fields(root: root, data: root["data"] ?? .object([:]), maxCustomBytes: maxCustomBytes)
            return .success(ClientFrame(id: id, request: try fields.request(type)))
        } catch {
            return .failure(ParseFailure(id: id, error: error))
        }
    }

    /// Why a frame was refused, and the correlation id to answer with.
    public struct ParseFailure: Error, Sendable, Equatable {
        public var id: JSONValue
        public var error: SwitchboardError
    }
}

/// Reads typed parameters out of a frame, failing with a message that names the field.
struct Fields {
    let root: JSONValue
    let data: JSONValue
    let maxCustomBytes: Int

    mutating func request(_ type: String) throws(SwitchboardError) -> ClientRequest {
        guard data.isObject else { throw SwitchboardError(.invalidRequest, "data must be an object") }
        switch type {
        case "auth": return .auth(token: try rootString("token"), resume: try resume())
        case "token.refresh": return .tokenRefresh(token: try string("token"))
        case "ping": return .ping
        case "call.get_or_create":
            return .getOrCreate(try cid(), members: try users("members"), ring: try bool("ring") ?? false, custom: try custom())
        case "call.get": return .get(try cid())
        case "call.join":
            return .join(
                try cid(), create: try bool("create") ?? false, ring: try bool("ring") ?? false, members: try users("members"),
                location: try location())
        case "call.leave": return .leave(try cid(), session: try session("session_id"))
        case "call.end": return .end(try cid())
        case "call.invite":
            let members = try users("members")
            guard !members.isEmpty else { throw SwitchboardError(.invalidRequest, "data.members must not be empty") }
            return .invite(try cid(), members: members)
        case "call.accept": return .accept(try cid())
        case "call.reject": return .reject(try cid(), reason: try rejectReason())
        case "call.update_participant": return try updateParticipant()
        case "call.send_event": return .sendEvent(try cid(), custom: try custom(required: true))
        case "signal.send": return try signal()
        case "device.register": return .registerDevice(try provider(), token: try deviceToken())
        case "device.unregister": return .unregisterDevice(try provider(), token: try deviceToken())
        case "device.list": return .listDevices
        default: throw SwitchboardError(.unknownType, "unknown request type \(type.prefix(64))")
        }
    }

    func rootString(_ key: String) throws(SwitchboardError) -> String {
        if let value = root[key]?.stringValue ?? data[key]?.stringValue, !value.isEmpty { return value }
        throw SwitchboardError(.unauthenticated, "\(key) must be a non-empty string")
    }

    func string(_ key: String) throws(SwitchboardError) -> String {
        guard let value = data[key]?.stringValue, !value.isEmpty else {
            throw SwitchboardError(.invalidRequest, "data.\(key) must be a non-empty string")
        }
        return value
    }

    func bool(_ key: String) throws(SwitchboardError) -> Bool? {
        guard let value = data[key], value != .null else { return nil }
        guard let flag = value.boolValue else { throw SwitchboardError(.invalidRequest, "data.\(key) must be a boolean") }
        return flag
    }

    func cid() throws(SwitchboardError) -> CallCID {
        let type = try string("type")
        let id = try string("id")
        guard let cid = CallCID(type: type, id: id) else {
            throw SwitchboardError(.invalidRequest, "data.type and data.id must be 1-64 characters of A-Z a-z 0-9 _ -")
        }
        return cid
    }

    func session(_ key: String) throws(SwitchboardError) -> SessionID? {
        guard let value = data[key], value != .null else { return nil }
        guard let text = value.stringValue, let session = SessionID(sent: text) else {
            throw SwitchboardError(.invalidRequest, "data.\(key) must be a session id: \(SessionID.rule)")
        }
        return session
    }

    func users(_ key: String) throws(SwitchboardError) -> [UserID] {
        guard let value = data[key], value != .null else { return [] }
        guard let items = value.arrayValue else { throw SwitchboardError(.invalidRequest, "data.\(key) must be an array of user ids") }
        var seen: Set<UserID> = []
        var users: [UserID] = []
        for item in items {
            let raw = item.stringValue ?? item["user_id"]?.stringValue
            guard let raw, let user = UserID(raw) else {
                throw SwitchboardError(.invalidRequest, "data.\(key) must hold user ids (1-128 characters, no control characters)")
            }
            if seen.insert(user).inserted { users.append(user) }
        }
        return users
    }

    func custom(required: Bool = false) throws(SwitchboardError) -> JSONValue {
        guard let value = data["custom"], value != .null else {
            if required { throw SwitchboardError(.invalidRequest, "data.custom must be an object") }
            return .object([:])
        }
        guard value.isObject else { throw SwitchboardError(.invalidRequest, "data.custom must be an object") }
        guard value.bytes.count <= maxCustomBytes else {
            throw SwitchboardError(.payloadTooLarge, "data.custom is larger than \(maxCustomBytes) bytes")
        }
        return value
    }

    func resume() throws(SwitchboardError) -> ResumeRequest? {
        guard let token = root["resume_token"] ?? data["resume_token"], token != .null else { return nil }
        guard let text = token.stringValue, !text.isEmpty, text.utf8.count <= 128 else {
            throw SwitchboardError(.invalidRequest, "resume_token must be a string")
        }
        let seq = root["last_seq"] ?? data["last_seq"] ?? .number(0)
        guard let number = seq.doubleValue, number >= 0, number < 9e15, number == number.rounded() else {
            throw SwitchboardError(.invalidRequest, "last_seq must be a non-negative integer")
        }
        return ResumeRequest(token: text, lastSeq: UInt64(number))
    }

    func location() throws(SwitchboardError) -> LocationHint? {
        guard let value = data["location"], value != .null else { return nil }
        guard value.isObject else { throw SwitchboardError(.invalidRequest, "data.location must be an object") }
        var hint = LocationHint()
        hint.latitude = value["latitude"]?.doubleValue
        hint.longitude = value["longitude"]?.doubleValue
        hint.region = value["region"]?.stringValue
        if case .object(let rtts)? = value["rtt"] {
            hint.rtt = rtts.compactMapValues(\.doubleValue)
        }
        return hint
    }

    func rejectReason() throws(SwitchboardError) -> RejectReason {
        guard let value = data["reason"], value != .null else { return .decline }
        guard let text = value.stringValue, let reason = RejectReason(rawValue: text) else {
            throw SwitchboardError(.invalidRequest, "data.reason must be one of decline, busy, cancel, timeout")
        }
        return reason
    }

    func updateParticipant() throws(SwitchboardError) -> ClientRequest {
        var update = MediaUpdate()
        update.audio = try bool("audio")
        update.video = try bool("video")
        update.screenshare = try bool("screenshare")
        update.speaking = try bool("speaking")
        update.pinned = try bool("pinned")
        if let level = data["audio_level"], level != .null {
            guard let number = level.doubleValue, number >= 0, number <= 1 else {
                throw SwitchboardError(.invalidRequest, "data.audio_level must be a number from 0 to 1")
            }
            update.audioLevel = number
        }
        guard !update.isEmpty else { throw SwitchboardError(.invalidRequest, "data must change at least one media field") }
        return .updateParticipant(try cid(), session: try session("session_id"), update: update)
    }

    func signal() throws(SwitchboardError) -> ClientRequest {
        guard let to = try session("to_session") else { throw SwitchboardError(.invalidRequest, "data.to_session is required") }
        guard let kindText = data["kind"]?.stringValue, let kind = SignalKind(rawValue: kindText) else {
            throw SwitchboardError(.invalidRequest, "data.kind must be offer, answer or candidate")
        }
        guard let payload = data["payload"], payload != .null else { throw SwitchboardError(.invalidRequest, "data.payload is required") }
        return .signal(from: try session("session_id"), to: to, kind: kind, payload: payload)
    }

    func provider() throws(SwitchboardError) -> DeviceProvider {
        guard let text = data["provider"]?.stringValue, let provider = DeviceProvider(rawValue: text) else {
            throw SwitchboardError(.invalidRequest, "data.provider must be one of apns, apns_voip, fcm, webpush")
        }
        return provider
    }

    func deviceToken() throws(SwitchboardError) -> String {
        guard let token = data["token"]?.stringValue else { throw SwitchboardError(.invalidRequest, "data.token must be a non-empty string") }
        try DeviceRecord.validate(token: token)
        return token
    }
}
