import SwitchboardProtocol

/// A call's address: its type and id (`cid` is `type:id`).
public struct CallID: Hashable, Sendable, CustomStringConvertible {
    public let type: String
    public let id: String
    public init(type: String, id: String) {
        self.type = type
        self.id = id
    }

    /// Parses `type:id`.
    public init?(cid: String) {
        guard let colon = cid.firstIndex(of: ":") else { return nil }
        self.init(type: String(cid[..<colon]), id: String(cid[cid.index(after: colon)...]))
    }

    public var cid: String { "\(type):\(id)" }
    public var description: String { cid }
}

/// The SFU a call uses (docs/protocol.md 6.4). On a Janus SFU a join (and `call.sfu_changed`)
/// also carries the room, and this session's own token and the room's PIN.
public struct SFUInfo: Sendable, Equatable, Decodable {
    public let id: String
    public let kind: String
    public let url: String
    public let region: String
    public let room: Int64?
    public let token: String?
    public let pin: String?
}

/// A call as the server describes it.
public struct CallInfo: Sendable, Equatable, Decodable {
    public let cid: String
    public let type: String
    public let id: String
    public let createdBy: String
    /// Milliseconds since 1970.
    public let createdAt: Int64
    public let session: Int
    public let endedAt: Int64?
    public let endedReason: String?
    public let ringing: Bool
    public let custom: JSONValue
    public let sfu: SFUInfo?
    public let dominantSpeaker: String?

    public var isEnded: Bool { endedAt != nil }

    enum CodingKeys: String, CodingKey {
        case cid, type, id, session, ringing, custom, sfu
        case createdBy = "created_by", createdAt = "created_at", endedAt = "ended_at", endedReason = "ended_reason"
        case dominantSpeaker = "dominant_speaker"
    }
}

/// A member's ring state (docs/protocol.md 6.7).
public enum RingState: String, Sendable, Equatable, Decodable {
    case none, ringing, accepted, rejected, missed
}

/// A member of a call.
public struct Member: Sendable, Equatable, Decodable {
    public let userId: String
    public var ringState: RingState
    public var ringReason: String?
    public var ringUpdatedAt: Int64?

    enum CodingKeys: String, CodingKey {
        case userId = "user_id", ringState = "ring_state", ringReason = "ring_reason", ringUpdatedAt = "ring_updated_at"
    }
}

/// One participant session of a call.
public struct Participant: Sendable, Equatable, Decodable, ParticipantOrderable {
    public let sessionId: String
    public let userId: String
    public let role: String
    public var audio: Bool
    public var video: Bool
    public var screenshare: Bool
    public var speaking: Bool
    public var audioLevel: Double
    public var pinned: Bool
    public var dominantSpeaker: Bool
    public let joinedAt: Int64

    public var orderUserID: String { userId }
    public var orderSessionID: String { sessionId }
    public var isPinned: Bool { pinned }
    public var isScreensharing: Bool { screenshare }
    public var isSpeaking: Bool { speaking }
    public var publishesVideo: Bool { video }
    public var publishesAudio: Bool { audio }

    enum CodingKeys: String, CodingKey {
        case role, audio, video, screenshare, speaking, pinned
        case sessionId = "session_id", userId = "user_id", audioLevel = "audio_level", dominantSpeaker = "dominant_speaker"
        case joinedAt = "joined_at"
    }
}

/// The full state most call requests answer with.
public struct CallSnapshot: Sendable, Equatable, Decodable {
    public let call: CallInfo
    public let members: [Member]
    public let participants: [Participant]
}

/// The answer to `call.join`: the state, this session, its role and the call's SFU (with this
/// session's token on a Janus SFU).
public struct JoinResult: Sendable, Equatable, Decodable {
    public let call: CallInfo
    public let members: [Member]
    public let participants: [Participant]
    public let sessionId: String
    public let role: String
    public let sfu: SFUInfo?

    public var snapshot: CallSnapshot { CallSnapshot(call: call, members: members, participants: participants) }

    enum CodingKeys: String, CodingKey {
        case call, members, participants, role, sfu
        case sessionId = "session_id"
    }
}

/// Hints for SFU placement sent with a join.
public struct CallLocation: Sendable, Equatable {
    public var latitude: Double?
    public var longitude: Double?
    public var region: String?
    /// Measured round-trip times to SFUs by id, in milliseconds.
    public var rtt: [String: Double]

    public init(latitude: Double? = nil, longitude: Double? = nil, region: String? = nil, rtt: [String: Double] = [:]) {
        self.latitude = latitude
        self.longitude = longitude
        self.region = region
        self.rtt = rtt
    }

    var json: JSONValue {
        var object: [String: JSONValue] = [:]
        if let latitude { object["latitude"] = .number(latitude) }
        if let longitude { object["longitude"] = .number(longitude) }
        if let region { object["region"] = .string(region) }
        if !rtt.isEmpty { object["rtt"] = .object(rtt.mapValues { .number($0) }) }
        return .object(object)
    }
}

/// Media state a participant reports (`call.update_participant`); only the fields set are sent.
public struct MediaUpdate: Sendable, Equatable {
    public var audio: Bool?
    public var video: Bool?
    public var screenshare: Bool?
    public var speaking: Bool?
    public var pinned: Bool?
    public var audioLevel: Double?

    public init(
        audio: Bool? = nil, video: Bool? = nil, screenshare: Bool? = nil, speaking: Bool? = nil, pinned: Bool? = nil, audioLevel: Double? = nil
    ) {
        self.audio = audio
        self.video = video
        self.screenshare = screenshare
        self.speaking = speaking
        self.pinned = pinned
        self.audioLevel = audioLevel
    }

    var fields: [String: JSONValue] {
        var fields: [String: JSONValue] = [:]
        if let audio { fields["audio"] = .bool(audio) }
        if let video { fields["video"] = .bool(video) }
        if let screenshare { fields["screenshare"] = .bool(screenshare) }
        if let speaking { fields["speaking"] = .bool(speaking) }
        if let pinned { fields["pinned"] = .bool(pinned) }
        if let audioLevel { fields["audio_level"] = .number(audioLevel) }
        return fields
    }
}

/// The push service a device token belongs to (docs/protocol.md 6.5, `device.register`).
public enum DeviceProvider: String, Sendable, Equatable, Hashable, CaseIterable, Decodable {
    /// An Apple Push Notification service token.
    case apns
    /// An iOS PushKit VoIP token (for CallKit).
    case apnsVoIP = "apns_voip"
    /// A Firebase Cloud Messaging registration token.
    case fcm
    /// A browser's push subscription, as its JSON text.
    case webpush
}

/// A push device of the user: what the `call.ring` webhook hands the operator's push service
/// when a call rings the user and no socket of theirs is open (docs/webhooks.md).
public struct Device: Sendable, Equatable, Decodable {
    /// What the admin API's `DELETE /v1/users/{user}/devices/{device}` takes.
    public let deviceId: String
    public let userId: String
    public let provider: DeviceProvider
    public let token: String
    /// When it was (last) registered, milliseconds since 1970.
    public let createdAt: Int64

    public init(deviceId: String, userId: String, provider: DeviceProvider, token: String, createdAt: Int64) {
        self.deviceId = deviceId
        self.userId = userId
        self.provider = provider
        self.token = token
        self.createdAt = createdAt
    }

    enum CodingKeys: String, CodingKey {
        case provider, token
        case deviceId = "device_id", userId = "user_id", createdAt = "created_at"
    }

    /// The `data` of `device.register` and `device.unregister`.
    static func fields(provider: DeviceProvider, token: String) -> [String: JSONValue] {
        ["provider": .string(provider.rawValue), "token": .string(token)]
    }
}
