/// Models read straight from a decoded ``JSONValue``: no second encode and decode through
/// `Codable` for every event (the state update's main cost, `scripts/bench client`). A field of
/// the wrong type is a `protocol_error`, as through `Decodable`.
extension JSONValue {
    func field(_ key: String) throws(SwitchboardClientError) -> JSONValue {
        guard let value = self[key] else { throw SwitchboardClientError(.protocolError, "missing \(key)") }
        return value
    }

    func string(_ key: String) throws(SwitchboardClientError) -> String {
        guard let value = self[key]?.stringValue else { throw SwitchboardClientError(.protocolError, "\(key) is not a string") }
        return value
    }

    func optionalString(_ key: String) -> String? { self[key]?.stringValue }

    func bool(_ key: String) throws(SwitchboardClientError) -> Bool {
        guard let value = self[key]?.boolValue else { throw SwitchboardClientError(.protocolError, "\(key) is not a boolean") }
        return value
    }

    func number(_ key: String) throws(SwitchboardClientError) -> Double {
        guard let value = self[key]?.doubleValue else { throw SwitchboardClientError(.protocolError, "\(key) is not a number") }
        return value
    }

    func optionalInt64(_ key: String) -> Int64? { self[key]?.int64Value }
}

extension Participant {
    init(json: JSONValue) throws(SwitchboardClientError) {
        self.init(
            sessionId: try json.string("session_id"), userId: try json.string("user_id"), role: try json.string("role"),
            audio: try json.bool("audio"), video: try json.bool("video"), screenshare: try json.bool("screenshare"),
            speaking: try json.bool("speaking"), audioLevel: try json.number("audio_level"), pinned: try json.bool("pinned"),
            dominantSpeaker: try json.bool("dominant_speaker"), joinedAt: Int64(try json.number("joined_at")))
    }
}

extension Member {
    init(json: JSONValue) throws(SwitchboardClientError) {
        guard let state = RingState(rawValue: try json.string("ring_state")) else {
            throw SwitchboardClientError(.protocolError, "unknown ring_state")
        }
        self.init(userId: try json.string("user_id"), ringState: state, ringReason: json.optionalString("ring_reason"), ringUpdatedAt: json.optionalInt64("ring_updated_at"))
    }

    static func list(_ json: JSONValue) throws(SwitchboardClientError) -> [Member] {
        guard let items = json.arrayValue else { throw SwitchboardClientError(.protocolError, "members is not an array") }
        var members: [Member] = []
        members.reserveCapacity(items.count)
        for item in items { members.append(try Member(json: item)) }
        return members
    }
}

extension SFUInfo {
    init(json: JSONValue) throws(SwitchboardClientError) {
        self.init(
            id: try json.string("id"), kind: try json.string("kind"), url: try json.string("url"), region: try json.string("region"),
            room: json.optionalInt64("room"), token: json.optionalString("token"), pin: json.optionalString("pin"))
    }
}

extension CallInfo {
    init(json: JSONValue) throws(SwitchboardClientError) {
        let sfu = try json.field("sfu")
        self.init(
            cid: try json.string("cid"), type: try json.string("type"), id: try json.string("id"), createdBy: try json.string("created_by"),
            createdAt: Int64(try json.number("created_at")), session: Int(try json.number("session")), endedAt: json.optionalInt64("ended_at"),
            endedReason: json.optionalString("ended_reason"), ringing: try json.bool("ringing"), custom: json["custom"] ?? .object([:]),
            sfu: sfu.isNull ? nil : try SFUInfo(json: sfu), dominantSpeaker: json.optionalString("dominant_speaker"))
    }
}

extension Device {
    init(json: JSONValue) throws(SwitchboardClientError) {
        guard let provider = DeviceProvider(rawValue: try json.string("provider")) else {
            throw SwitchboardClientError(.protocolError, "unknown device provider")
        }
        self.init(
            deviceId: try json.string("device_id"), userId: try json.string("user_id"), provider: provider, token: try json.string("token"),
            createdAt: Int64(try json.number("created_at")))
    }

    static func list(_ json: JSONValue) throws(SwitchboardClientError) -> [Device] {
        guard let items = json.arrayValue else { throw SwitchboardClientError(.protocolError, "devices is not an array") }
        var devices: [Device] = []
        devices.reserveCapacity(items.count)
        for item in items { devices.append(try Device(json: item)) }
        return devices
    }
}
