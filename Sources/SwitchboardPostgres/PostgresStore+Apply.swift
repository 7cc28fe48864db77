import Foundation
import PostgresNIO
import SwitchboardCore

/// A call batch in one transaction: its rows folded per table (``PostgresBatch``) and written
/// with a few statements that bind each column as an array, saves as upserts that replace every
/// column but the key (as the SQLite store's rows do).
extension PostgresStore {
    public func apply(_ mutations: [CallMutation]) throws {
        try CallMutation.validate(mutations)
        let ownership = callOwnership
        let statements = try Self.statements(mutations, node: ownership?.node)
        let held = try ownership?.generations(of: CallMutation.calls(in: mutations)) ?? []
        try write { connection in
            try ownership?.checkHeld(held, connection)
            for (sql, binds) in statements { try connection.execute(sql, binds) }
        }
    }

    /// The statements that write `mutations` (validated by the caller); connections saved are
    /// stamped with `node`, the node holding them, and a connection another live node holds
    /// now (a resume took it over) is neither saved over nor deleted.
    static func statements(_ mutations: [CallMutation], node: String? = nil) throws(SwitchboardError) -> [(String, PostgresBindings)] {
        do {
            var batch = PostgresBatch()
            for mutation in mutations { try add(mutation, to: &batch, node: node) }
            return try batch.statements()
        } catch let error as SwitchboardError {
            throw error
        } catch {
            // A value with no stored form (a non-finite number in a session's JSON): as the
            // SQLite store reports it.
            throw SwitchboardError(.unavailable, "call store: \(error)")
        }
    }

    static func add(_ mutation: CallMutation, to batch: inout PostgresBatch, node: String?) throws {
        switch mutation {
        case .saveCall(let call):
            batch.save(Table.call, [
                .text(call.cid.cid), .text(call.cid.type), .text(call.cid.id), .text(call.createdBy.rawValue), .time(call.createdAt),
                .bigint(Int64(call.session)), .time(call.endedAt), .text(call.endedReason?.rawValue), .boolean(call.rung),
                .time(call.autoCancelAt), .time(call.emptyDeadline), .text(call.custom.text), .bigint(call.eventSeq),
            ])
        case .saveMember(let member):
            batch.save(Table.member, [
                .text(member.cid.cid), .text(member.userID.rawValue), .time(member.addedAt), .text(member.ringState.rawValue),
                .text(member.ringReason?.rawValue), .time(member.ringUpdatedAt), .time(member.ringDeadline),
            ])
        case .saveSession(let session):
            batch.save(Table.session, [
                .text(session.sessionID.rawValue), .text(session.cid.cid), .bigint(Int64(session.callSession)), .text(session.userID.rawValue),
                .text(session.connection.rawValue), .text(session.role.rawValue), .time(session.joinedAt), .time(session.leftAt),
                .text(session.leftReason), .text(try session.location.map(StoredJSON.location)), .text(try StoredJSON.media(session.media)),
            ])
        case .appendEvent(let event):
            batch.save(Table.event, [
                .text(event.cid.cid), .bigint(Int64(event.callSession)), .time(event.at), .text(event.type), .text(event.payload.text),
            ])
        case .saveConnection(let connection):
            batch.save(Table.connection, [
                .text(connection.id.rawValue), .text(connection.userID.rawValue), .text(connection.resumeToken), .time(connection.connectedAt),
                .time(connection.tokenExpiresAt), .time(connection.detachedAt), .text(node ?? connection.node),
            ])
        case .deleteConnection(let id):
            batch.delete(Table.connection, key: [.text(id.rawValue)], holder: .text(node))
        case .savePlacement(let placement):
            batch.save(Table.placement, [
                .text(placement.callID), .text(placement.sfu.rawValue), .text(try StoredJSON.encoded(placement.locations)),
                .text(placement.sources.map(\.rawValue).joined(separator: ",")), .time(placement.assignedAt), .text(placement.reason),
                .bigint(placement.room.map { Int64(bitPattern: $0) }),
            ])
        case .deletePlacement(let cid):
            batch.delete(Table.placement, key: [.text(cid.cid)])
        case .enqueueWebhook(let message, let endpoints):
            batch.save(Table.message, [
                .text(message.id), .text(message.type.rawValue), .time(message.createdAt), .text(message.lane), .bigint(message.seq),
                .text(message.data.text),
            ])
            for endpoint in endpoints { batch.save(Table.delivery, deliveryRow(WebhookDelivery(message, endpoint: endpoint))) }
        case .saveWebhookDelivery(let delivery):
            batch.save(Table.delivery, deliveryRow(delivery))
        case .saveWebhookEndpoint(let endpoint):
            batch.save(Table.endpoint, [
                .text(endpoint.name), .text(endpoint.secret), .text(endpoint.previousSecret), .time(endpoint.previousUntil),
                .time(endpoint.disabledAt), .text(endpoint.configuredDigest),
            ])
        case .saveDevice(let device):
            batch.save(Table.device, [.text(device.provider.rawValue), .text(device.token), .text(device.userID.rawValue), .time(device.createdAt)])
        case .deleteDevice(let key):
            batch.delete(Table.device, key: [.text(key.provider.rawValue), .text(key.token)])
        }
    }

    private static func deliveryRow(_ delivery: WebhookDelivery) -> [PostgresCell] {
        [
            .text(delivery.messageID), .text(delivery.endpoint), .text(delivery.type.rawValue), .text(delivery.lane), .bigint(delivery.seq),
            .time(delivery.createdAt), .text(delivery.status.rawValue), .bigint(Int64(delivery.attempts)), .time(delivery.nextAttemptAt),
            .time(delivery.lastAttemptAt), .bigint(delivery.lastStatus.map(Int64.init)), .text(delivery.lastError),
        ]
    }

    /// The tables a call batch writes, their columns in the order of their rows above.
    enum Table {
        static let call = PostgresTable(
            "call", key: 1,
            [
                "cid": .text, "type": .text, "id": .text, "created_by": .text, "created_at": .timestamptz, "session": .bigint,
                "ended_at": .timestamptz, "ended_reason": .text, "rung": .boolean, "auto_cancel_at": .timestamptz,
                "empty_deadline": .timestamptz, "custom": .text, "event_seq": .bigint,
            ])
        static let member = PostgresTable(
            "call_member", key: 2,
            [
                "cid": .text, "user_id": .text, "added_at": .timestamptz, "ring_state": .text, "ring_reason": .text,
                "ring_updated_at": .timestamptz, "ring_deadline": .timestamptz,
            ])
        static let session = PostgresTable(
            "call_session", key: 1,
            [
                "session_id": .text, "cid": .text, "call_session": .bigint, "user_id": .text, "connection_id": .text, "role": .text,
                "joined_at": .timestamptz, "left_at": .timestamptz, "left_reason": .text, "location": .text, "media": .text,
            ])
        static let event = PostgresTable(
            "call_event", key: 0, ["cid": .text, "call_session": .bigint, "at": .timestamptz, "type": .text, "payload": .text])
        static let connection = PostgresTable(
            "client_connection", key: 1,
            fence: PostgresTable.Fence(column: "node") { "EXISTS (SELECT 1 FROM node n WHERE n.id = \($0) AND n.lease_until > now())" },
            [
                "id": .text, "user_id": .text, "resume_token": .text, "connected_at": .timestamptz, "token_expires_at": .timestamptz,
                "detached_at": .timestamptz, "node": .text,
            ])
        static let placement = PostgresTable(
            "call_placement", key: 1,
            [
                "call_id": .text, "sfu_id": .text, "locations": .text, "sources": .text, "assigned_at": .timestamptz, "reason": .text,
                "room": .bigint,
            ])
        static let message = PostgresTable(
            "webhook_message", key: 1, conflict: .keep,
            ["id": .text, "type": .text, "created_at": .timestamptz, "lane": .text, "seq": .bigint, "data": .text])
        static let delivery = PostgresTable(
            "webhook_delivery", key: 2,
            [
                "message_id": .text, "endpoint": .text, "type": .text, "lane": .text, "seq": .bigint, "created_at": .timestamptz,
                "status": .text, "attempts": .bigint, "next_attempt_at": .timestamptz, "last_attempt_at": .timestamptz,
                "last_status": .bigint, "last_error": .text,
            ])
        static let endpoint = PostgresTable(
            "webhook_endpoint", key: 1,
            [
                "name": .text, "secret": .text, "previous_secret": .text, "previous_until": .timestamptz, "disabled_at": .timestamptz,
                "configured_digest": .text,
            ])
        static let device = PostgresTable(
            "device", key: 2, ["provider": .text, "token": .text, "user_id": .text, "created_at": .timestamptz])
    }
}

/// Times as every store keeps them: to the nearest millisecond.
enum PostgresTime {
    static func bind(_ date: Date) -> Date {
        Date(timeIntervalSince1970: (date.timeIntervalSince1970 * 1000).rounded() / 1000)
    }

    static func bind(_ date: Date?) -> Date? {
        date.map(bind)
    }

    /// A stored time read back: the millisecond it was bound at (the engine keeps microseconds,
    /// and the driver's conversion may land one below).
    static func read(_ date: Date) -> Date {
        bind(date)
    }

    static func read(_ date: Date?) -> Date? {
        date.map(read)
    }

    static func milliseconds(_ date: Date) -> Int64 {
        Int64((date.timeIntervalSince1970 * 1000).rounded())
    }

    static func date(milliseconds: Int64) -> Date {
        Date(timeIntervalSince1970: Double(milliseconds) / 1000)
    }
}

extension PostgresCell {
    /// A time as every store keeps it, to the nearest millisecond.
    static func time(_ date: Date?) -> PostgresCell { .timestamptz(PostgresTime.bind(date)) }
}
