import Foundation

/// A call-protocol connection as the admin API shows it.
public struct ConnectionView: Sendable, Equatable {
    public var id: ClientConnectionID
    public var user: UserID
    /// Whether a socket is attached (else it waits for a resume).
    public var attached: Bool
    public var remoteAddress: String
    public var connectedAt: Date
    public var tokenExpiresAt: Date
    public var detachedAt: Date?
    public var sessions: [SessionID]
    /// The `seq` of the last event sent.
    public var lastSeq: UInt64

    public init(
        id: ClientConnectionID, user: UserID, attached: Bool, remoteAddress: String, connectedAt: Date, tokenExpiresAt: Date, detachedAt: Date?,
        sessions: [SessionID], lastSeq: UInt64
    ) {
        self.id = id
        self.user = user
        self.attached = attached
        self.remoteAddress = remoteAddress
        self.connectedAt = connectedAt
        self.tokenExpiresAt = tokenExpiresAt
        self.detachedAt = detachedAt
        self.sessions = sessions
        self.lastSeq = lastSeq
    }

    public var json: JSONValue {
        .object([
            "connection_id": .string(id.rawValue), "user_id": .string(user.rawValue), "attached": .bool(attached),
            "remote_address": .string(remoteAddress), "connected_at": .time(connectedAt), "token_expires_at": .time(tokenExpiresAt),
            "detached_at": detachedAt.map(JSONValue.time) ?? .null, "sessions": .array(sessions.map { .string($0.rawValue) }),
            "last_seq": .number(Double(lastSeq)),
        ])
    }
}

/// The admin API's port onto calls: history from the store, live actions through the call
/// hub's queue (committed before they return).
public protocol CallAdministration: Sendable {
    func listCalls(_ query: CallQuery) throws(SwitchboardError) -> CallPage
    /// The stored call with its members, sessions and recent events, plus its SFU; `nil`
    /// when the id was never used.
    func callDetail(_ cid: CallCID, eventLimit: Int) throws(SwitchboardError) -> (detail: CallDetail, sfu: SFUAssignment?)?
    /// Ends a live call with reason `admin`.
    func endCall(_ cid: CallCID) throws(SwitchboardError)
    /// Removes a participant session (reason `kicked`).
    func removeSession(_ session: SessionID, from cid: CallCID) throws(SwitchboardError)
    /// Every call-protocol connection, attached or waiting for a resume.
    func connections() -> [ConnectionView]
}

extension CallRecord {
    /// The call as the admin API lists it.
    public var adminJSON: JSONValue {
        .object([
            "cid": .string(cid.cid), "type": .string(cid.type), "id": .string(cid.id), "created_by": .string(createdBy.rawValue),
            "created_at": .time(createdAt), "session": .number(Double(session)), "live": .bool(isLive),
            "ended_at": endedAt.map(JSONValue.time) ?? .null, "ended_reason": .optional(endedReason?.rawValue), "rung": .bool(rung),
            "auto_cancel_at": autoCancelAt.map(JSONValue.time) ?? .null, "empty_deadline": emptyDeadline.map(JSONValue.time) ?? .null,
            "custom": custom,
        ])
    }
}

extension CallDetail {
    /// `{call, members, sessions, events, sfu}` for `GET /v1/calls/{type}/{id}`.
    public func adminJSON(sfu: SFUAssignment?) -> JSONValue {
        let members = self.members.map { member -> JSONValue in
            guard case .object(var fields) = member.json else { return .null }
            fields["added_at"] = .time(member.addedAt)
            fields["ring_deadline"] = member.ringDeadline.map(JSONValue.time) ?? .null
            return .object(fields)
        }
        let sessions = self.sessions.map { session -> JSONValue in
            guard case .object(var fields) = session.json(dominant: nil) else { return .null }
            fields.removeValue(forKey: "dominant_speaker")
            fields["call_session"] = .number(Double(session.callSession))
            fields["connection_id"] = .string(session.connection.rawValue)
            fields["left_at"] = session.leftAt.map(JSONValue.time) ?? .null
            fields["left_reason"] = .optional(session.leftReason)
            fields["active"] = .bool(session.isActive)
            return .object(fields)
        }
        let events = self.events.map { event -> JSONValue in
            .object(["type": .string(event.type), "at": .time(event.at), "call_session": .number(Double(event.callSession)), "data": event.payload])
        }
        return .object([
            "call": call.adminJSON, "members": .array(members), "sessions": .array(sessions), "events": .array(events),
            "sfu": sfu?.json ?? .null,
        ])
    }
}
