import Foundation
import PostgresNIO
import SwitchboardCore

/// A call batch as statements: one transaction per batch, one statement per row, saves as
/// upserts that replace every column but the key (as the SQLite store's rows do).
extension PostgresStore {
    public func apply(_ mutations: [CallMutation]) throws {
        try CallMutation.validate(mutations)
        let statements: [(String, PostgresBindings)]
        do {
            statements = try mutations.flatMap(Self.statements)
        } catch let error as SwitchboardError {
            throw error
        } catch {
            // A value with no stored form (a non-finite number in a session's JSON): as the
            // SQLite store reports it.
            throw SwitchboardError(.unavailable, "call store: \(error)")
        }
        try write { connection in
            for (sql, binds) in statements { try connection.execute(sql, binds) }
        }
    }

    static func statements(_ mutation: CallMutation) throws -> [(String, PostgresBindings)] {
        var binds = PostgresBindings()
        switch mutation {
        case .saveCall(let call):
            binds.append(call.cid.cid)
            binds.append(call.cid.type)
            binds.append(call.cid.id)
            binds.append(call.createdBy.rawValue)
            binds.append(PostgresTime.bind(call.createdAt))
            binds.append(Int64(call.session))
            binds.append(PostgresTime.bind(call.endedAt))
            binds.append(call.endedReason?.rawValue)
            binds.append(call.rung)
            binds.append(PostgresTime.bind(call.autoCancelAt))
            binds.append(PostgresTime.bind(call.emptyDeadline))
            binds.append(call.custom.text)
            binds.append(call.eventSeq)
            return [(Statement.call, binds)]
        case .saveMember(let member):
            binds.append(member.cid.cid)
            binds.append(member.userID.rawValue)
            binds.append(PostgresTime.bind(member.addedAt))
            binds.append(member.ringState.rawValue)
            binds.append(member.ringReason?.rawValue)
            binds.append(PostgresTime.bind(member.ringUpdatedAt))
            binds.append(PostgresTime.bind(member.ringDeadline))
            return [(Statement.member, binds)]
        case .saveSession(let session):
            binds.append(session.sessionID.rawValue)
            binds.append(session.cid.cid)
            binds.append(Int64(session.callSession))
            binds.append(session.userID.rawValue)
            binds.append(session.connection.rawValue)
            binds.append(session.role.rawValue)
            binds.append(PostgresTime.bind(session.joinedAt))
            binds.append(PostgresTime.bind(session.leftAt))
            binds.append(session.leftReason)
            binds.append(try session.location.map(StoredJSON.location))
            binds.append(try StoredJSON.media(session.media))
            return [(Statement.session, binds)]
        case .appendEvent(let event):
            binds.append(event.cid.cid)
            binds.append(Int64(event.callSession))
            binds.append(PostgresTime.bind(event.at))
            binds.append(event.type)
            binds.append(event.payload.text)
            return [(Statement.event, binds)]
        case .saveConnection(let connection):
            binds.append(connection.id.rawValue)
            binds.append(connection.userID.rawValue)
            binds.append(connection.resumeToken)
            binds.append(PostgresTime.bind(connection.connectedAt))
            binds.append(PostgresTime.bind(connection.tokenExpiresAt))
            binds.append(PostgresTime.bind(connection.detachedAt))
            return [(Statement.connection, binds)]
        case .deleteConnection(let id):
            binds.append(id.rawValue)
            return [("DELETE FROM client_connection WHERE id = $1", binds)]
        case .savePlacement(let placement):
            binds.append(placement.callID)
            binds.append(placement.sfu.rawValue)
            binds.append(try StoredJSON.encoded(placement.locations))
            binds.append(placement.sources.map(\.rawValue).joined(separator: ","))
            binds.append(PostgresTime.bind(placement.assignedAt))
            binds.append(placement.reason)
            binds.append(placement.room.map { Int64(bitPattern: $0) })
            return [(Statement.placement, binds)]
        case .deletePlacement(let cid):
            binds.append(cid.cid)
            return [("DELETE FROM call_placement WHERE call_id = $1", binds)]
        case .enqueueWebhook(let message, let endpoints):
            binds.append(message.id)
            binds.append(message.type.rawValue)
            binds.append(PostgresTime.bind(message.createdAt))
            binds.append(message.lane)
            binds.append(message.seq)
            binds.append(message.data.text)
            return [(Statement.message, binds)] + endpoints.map { (Statement.delivery, deliveryBinds(WebhookDelivery(message, endpoint: $0))) }
        case .saveWebhookDelivery(let delivery):
            return [(Statement.delivery, deliveryBinds(delivery))]
        case .saveWebhookEndpoint(let endpoint):
            binds.append(endpoint.name)
            binds.append(endpoint.secret)
            binds.append(endpoint.previousSecret)
            binds.append(PostgresTime.bind(endpoint.previousUntil))
            binds.append(PostgresTime.bind(endpoint.disabledAt))
            binds.append(endpoint.configuredDigest)
            return [(Statement.endpoint, binds)]
        case .saveDevice(let device):
            binds.append(device.provider.rawValue)
            binds.append(device.token)
            binds.append(device.userID.rawValue)
            binds.append(PostgresTime.bind(device.createdAt))
            return [(Statement.device, binds)]
        case .deleteDevice(let key):
            binds.append(key.provider.rawValue)
            binds.append(key.token)
            return [("DELETE FROM device WHERE provider = $1 AND token = $2", binds)]
        }
    }

    private static func deliveryBinds(_ delivery: WebhookDelivery) -> PostgresBindings {
        var binds = PostgresBindings()
        binds.append(delivery.messageID)
        binds.append(delivery.endpoint)
        binds.append(delivery.type.rawValue)
        binds.append(delivery.lane)
        binds.append(delivery.seq)
        binds.append(PostgresTime.bind(delivery.createdAt))
        binds.append(delivery.status.rawValue)
        binds.append(Int64(delivery.attempts))
        binds.append(PostgresTime.bind(delivery.nextAttemptAt))
        binds.append(PostgresTime.bind(delivery.lastAttemptAt))
        binds.append(delivery.lastStatus.map(Int64.init))
        binds.append(delivery.lastError)
        return binds
    }

    /// The statements; saves replace every column but the key.
    enum Statement {
        static let call = """
            INSERT INTO call (cid, type, id, created_by, created_at, session, ended_at, ended_reason, rung, auto_cancel_at,
              empty_deadline, custom, event_seq)
            VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13)
            ON CONFLICT (cid) DO UPDATE SET created_by = EXCLUDED.created_by, created_at = EXCLUDED.created_at,
              session = EXCLUDED.session, ended_at = EXCLUDED.ended_at, ended_reason = EXCLUDED.ended_reason, rung = EXCLUDED.rung,
              auto_cancel_at = EXCLUDED.auto_cancel_at, empty_deadline = EXCLUDED.empty_deadline, custom = EXCLUDED.custom,
              event_seq = EXCLUDED.event_seq
            """
        static let member = """
            INSERT INTO call_member (cid, user_id, added_at, ring_state, ring_reason, ring_updated_at, ring_deadline)
            VALUES ($1, $2, $3, $4, $5, $6, $7)
            ON CONFLICT (cid, user_id) DO UPDATE SET added_at = EXCLUDED.added_at, ring_state = EXCLUDED.ring_state,
              ring_reason = EXCLUDED.ring_reason, ring_updated_at = EXCLUDED.ring_updated_at, ring_deadline = EXCLUDED.ring_deadline
            """
        static let session = """
            INSERT INTO call_session (session_id, cid, call_session, user_id, connection_id, role, joined_at, left_at, left_reason,
              location, media)
            VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)
            ON CONFLICT (session_id) DO UPDATE SET cid = EXCLUDED.cid, call_session = EXCLUDED.call_session, user_id = EXCLUDED.user_id,
              connection_id = EXCLUDED.connection_id, role = EXCLUDED.role, joined_at = EXCLUDED.joined_at, left_at = EXCLUDED.left_at,
              left_reason = EXCLUDED.left_reason, location = EXCLUDED.location, media = EXCLUDED.media
            """
        static let event = "INSERT INTO call_event (cid, call_session, at, type, payload) VALUES ($1, $2, $3, $4, $5)"
        static let connection = """
            INSERT INTO client_connection (id, user_id, resume_token, connected_at, token_expires_at, detached_at)
            VALUES ($1, $2, $3, $4, $5, $6)
            ON CONFLICT (id) DO UPDATE SET user_id = EXCLUDED.user_id, resume_token = EXCLUDED.resume_token,
              connected_at = EXCLUDED.connected_at, token_expires_at = EXCLUDED.token_expires_at, detached_at = EXCLUDED.detached_at
            """
        static let placement = """
            INSERT INTO call_placement (call_id, sfu_id, locations, sources, assigned_at, reason, room) VALUES ($1, $2, $3, $4, $5, $6, $7)
            ON CONFLICT (call_id) DO UPDATE SET sfu_id = EXCLUDED.sfu_id, locations = EXCLUDED.locations, sources = EXCLUDED.sources,
              assigned_at = EXCLUDED.assigned_at, reason = EXCLUDED.reason, room = EXCLUDED.room
            """
        static let message = """
            INSERT INTO webhook_message (id, type, created_at, lane, seq, data) VALUES ($1, $2, $3, $4, $5, $6)
            ON CONFLICT (id) DO NOTHING
            """
        static let delivery = """
            INSERT INTO webhook_delivery (message_id, endpoint, type, lane, seq, created_at, status, attempts, next_attempt_at,
              last_attempt_at, last_status, last_error)
            VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)
            ON CONFLICT (message_id, endpoint) DO UPDATE SET type = EXCLUDED.type, lane = EXCLUDED.lane, seq = EXCLUDED.seq,
              created_at = EXCLUDED.created_at, status = EXCLUDED.status, attempts = EXCLUDED.attempts,
              next_attempt_at = EXCLUDED.next_attempt_at, last_attempt_at = EXCLUDED.last_attempt_at,
              last_status = EXCLUDED.last_status, last_error = EXCLUDED.last_error
            """
        static let endpoint = """
            INSERT INTO webhook_endpoint (name, secret, previous_secret, previous_until, disabled_at, configured_digest)
            VALUES ($1, $2, $3, $4, $5, $6)
            ON CONFLICT (name) DO UPDATE SET secret = EXCLUDED.secret, previous_secret = EXCLUDED.previous_secret,
              previous_until = EXCLUDED.previous_until, disabled_at = EXCLUDED.disabled_at, configured_digest = EXCLUDED.configured_digest
            """
        static let device = """
            INSERT INTO device (provider, token, user_id, created_at) VALUES ($1, $2, $3, $4)
            ON CONFLICT (provider, token) DO UPDATE SET user_id = EXCLUDED.user_id, created_at = EXCLUDED.created_at
            """
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
