import Foundation
import PostgresNIO
import SwitchboardCore

/// Stored rows back into records, by column name. A row the core cannot take (an id it
/// refuses, a state it does not know) is left out, as the SQLite store leaves it out.
enum Rows {
    static func call(_ row: PostgresRow) -> CallRecord? {
        let r = row.makeRandomAccess()
        guard let cid = CallCID(cid: text(r, "cid")), let createdBy = UserID(text(r, "created_by")), let createdAt = time(r, "created_at") else {
            return nil
        }
        let reason: String? = value(r, "ended_reason")
        let rung: Bool? = value(r, "rung")
        let session: Int64? = value(r, "session")
        let eventSeq: Int64? = value(r, "event_seq")
        return CallRecord(
            cid: cid, createdBy: createdBy, createdAt: createdAt, session: Int(session ?? 1), endedAt: time(r, "ended_at"),
            endedReason: reason.flatMap(CallEndReason.init(rawValue:)), rung: rung ?? false, autoCancelAt: time(r, "auto_cancel_at"),
            emptyDeadline: time(r, "empty_deadline"), custom: JSONValue.parse(text: value(r, "custom")), eventSeq: eventSeq ?? 0)
    }

    static func member(_ row: PostgresRow) -> MemberRecord? {
        let r = row.makeRandomAccess()
        guard let cid = CallCID(cid: text(r, "cid")), let user = UserID(text(r, "user_id")), let state = RingState(rawValue: text(r, "ring_state")),
            let addedAt = time(r, "added_at")
        else { return nil }
        let reason: String? = value(r, "ring_reason")
        return MemberRecord(
            cid: cid, userID: user, addedAt: addedAt, ringState: state, ringReason: reason.flatMap(RejectReason.init(rawValue:)),
            ringUpdatedAt: time(r, "ring_updated_at"), ringDeadline: time(r, "ring_deadline"))
    }

    static func session(_ row: PostgresRow) -> SessionRecord? {
        let r = row.makeRandomAccess()
        guard let cid = CallCID(cid: text(r, "cid")), let user = UserID(text(r, "user_id")), let role = ParticipantRole(rawValue: text(r, "role")),
            let joinedAt = time(r, "joined_at"), let callSession: Int64 = value(r, "call_session")
        else { return nil }
        let location: String? = value(r, "location")
        return SessionRecord(
            sessionID: SessionID(text(r, "session_id")), cid: cid, callSession: Int(callSession), userID: user,
            connection: ClientConnectionID(text(r, "connection_id")), role: role, joinedAt: joinedAt, leftAt: time(r, "left_at"),
            leftReason: value(r, "left_reason"), location: location.flatMap { json(LocationHint.self, $0) },
            media: json(MediaState.self, text(r, "media")) ?? MediaState())
    }

    static func event(_ row: PostgresRow) -> CallEventRecord? {
        let r = row.makeRandomAccess()
        guard let cid = CallCID(cid: text(r, "cid")), let at = time(r, "at"), let callSession: Int64 = value(r, "call_session") else { return nil }
        return CallEventRecord(cid: cid, callSession: Int(callSession), at: at, type: text(r, "type"), payload: JSONValue.parse(text: value(r, "payload")))
    }

    static func connection(_ row: PostgresRow) -> ConnectionRecord? {
        let r = row.makeRandomAccess()
        guard let user = UserID(text(r, "user_id")), let connectedAt = time(r, "connected_at"), let expires = time(r, "token_expires_at") else {
            return nil
        }
        return ConnectionRecord(
            id: ClientConnectionID(text(r, "id")), userID: user, resumeToken: text(r, "resume_token"), connectedAt: connectedAt,
            tokenExpiresAt: expires, detachedAt: time(r, "detached_at"), node: value(r, "node"))
    }

    static func placement(_ row: PostgresRow) -> PlacementRecord? {
        let r = row.makeRandomAccess()
        guard let sfu = SFUID(text(r, "sfu_id")), let locations = json([LocationHint].self, text(r, "locations")), let assignedAt = time(r, "assigned_at")
        else { return nil }
        let room: Int64? = value(r, "room")
        return PlacementRecord(
            callID: text(r, "call_id"), sfu: sfu, locations: locations,
            sources: text(r, "sources").split(separator: ",").compactMap { LocationSource(rawValue: String($0)) }, assignedAt: assignedAt,
            reason: text(r, "reason"), room: room.map { UInt64(bitPattern: $0) })
    }

    static func device(_ row: PostgresRow) -> DeviceRecord? {
        let r = row.makeRandomAccess()
        guard let user = UserID(text(r, "user_id")), let provider = DeviceProvider(rawValue: text(r, "provider")), let createdAt = time(r, "created_at")
        else { return nil }
        return DeviceRecord(userID: user, provider: provider, token: text(r, "token"), createdAt: createdAt)
    }

    static func delivery(_ row: PostgresRow) -> WebhookDelivery? {
        let r = row.makeRandomAccess()
        guard let type = WebhookEventType(rawValue: text(r, "type")), let status = WebhookDeliveryStatus(rawValue: text(r, "status")),
            let createdAt = time(r, "created_at"), let seq: Int64 = value(r, "seq"), let attempts: Int64 = value(r, "attempts")
        else { return nil }
        let lastStatus: Int64? = value(r, "last_status")
        return WebhookDelivery(
            messageID: text(r, "message_id"), endpoint: text(r, "endpoint"), type: type, lane: text(r, "lane"), seq: seq, createdAt: createdAt,
            status: status, attempts: Int(attempts), nextAttemptAt: time(r, "next_attempt_at"), lastAttemptAt: time(r, "last_attempt_at"),
            lastStatus: lastStatus.map { Int($0) }, lastError: value(r, "last_error"))
    }

    /// A delivery joined with its message (`message_*` columns).
    static func pending(_ row: PostgresRow) -> PendingWebhook? {
        guard let delivery = delivery(row) else { return nil }
        let r = row.makeRandomAccess()
        guard let type = WebhookEventType(rawValue: text(r, "message_type")), let createdAt = time(r, "message_created_at"),
            let seq: Int64 = value(r, "message_seq")
        else { return nil }
        let message = WebhookMessage(
            id: delivery.messageID, type: type, createdAt: createdAt, lane: text(r, "message_lane"), seq: seq,
            data: JSONValue.parse(text: value(r, "message_data")))
        return PendingWebhook(delivery: delivery, message: message)
    }

    static func endpoint(_ row: PostgresRow) -> WebhookEndpointState? {
        let r = row.makeRandomAccess()
        return WebhookEndpointState(
            name: text(r, "name"), secret: value(r, "secret"), previousSecret: value(r, "previous_secret"), previousUntil: time(r, "previous_until"),
            disabledAt: time(r, "disabled_at"), configuredDigest: value(r, "configured_digest"))
    }

    // MARK: - Cells

    private static func value<T: PostgresDecodable>(_ row: PostgresRandomAccessRow, _ column: String) -> T? {
        let cell = row[column]
        guard cell.bytes != nil else { return nil }
        return try? cell.decode(T.self)
    }

    private static func text(_ row: PostgresRandomAccessRow, _ column: String) -> String {
        value(row, column) ?? ""
    }

    private static func time(_ row: PostgresRandomAccessRow, _ column: String) -> Date? {
        PostgresTime.read(value(row, column) as Date?)
    }

    private static func json<T: Decodable>(_ type: T.Type, _ text: String) -> T? {
        try? JSONDecoder().decode(type, from: Data(text.utf8))
    }
}
