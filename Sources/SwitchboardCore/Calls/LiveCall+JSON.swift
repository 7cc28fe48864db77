import Foundation

extension LiveCall {
    /// The `call` object of responses and events.
    public var json: JSONValue {
        let record = self.record
        return .object([
            "cid": .string(record.cid.cid), "type": .string(record.cid.type), "id": .string(record.cid.id),
            "created_by": .string(record.createdBy.rawValue), "created_at": .time(record.createdAt),
            "session": .number(Double(record.session)), "ended_at": record.endedAt.map(JSONValue.time) ?? .null,
            "ended_reason": .optional(record.endedReason?.rawValue), "ringing": .bool(!ringingMembers.isEmpty),
            "custom": record.custom, "sfu": sfu?.json ?? .null,
            "dominant_speaker": .optional(dominant.current?.rawValue),
        ])
    }

    /// Members sorted by user id, with their ring states.
    public var membersJSON: JSONValue {
        .array(members.values.sorted { $0.userID < $1.userID }.map(\.json))
    }

    /// Participants in the default order.
    public var participantsJSON: JSONValue {
        .array(orderedSessions.map { $0.json(dominant: dominant.current) })
    }

    /// `{call, members, participants}`: the full state a client needs.
    public var stateJSON: JSONValue {
        .object(["call": json, "members": membersJSON, "participants": participantsJSON])
    }
}

extension MemberRecord {
    public var json: JSONValue {
        .object([
            "user_id": .string(userID.rawValue), "ring_state": .string(ringState.rawValue), "ring_reason": .optional(ringReason?.rawValue),
            "ring_updated_at": ringUpdatedAt.map(JSONValue.time) ?? .null,
        ])
    }
}

extension SessionRecord {
    public func json(dominant: SessionID?) -> JSONValue {
        .object([
            "session_id": .string(sessionID.rawValue), "user_id": .string(userID.rawValue), "role": .string(role.rawValue),
            "joined_at": .time(joinedAt), "audio": .bool(media.audio), "video": .bool(media.video),
            "screenshare": .bool(media.screenshare), "speaking": .bool(media.speaking), "audio_level": .number(media.audioLevel),
            "pinned": .bool(media.pinned), "dominant_speaker": .bool(sessionID == dominant),
        ])
    }
}
