import Foundation
import GRDB
import SwitchboardCore

/// The call store in SQLite: `call`, `call_member`, `call_session`, `call_event` and
/// `client_connection` (migration `v6_calls`). Row decoding and history queries are in
/// `SQLiteStore+CallQueries.swift`.
extension SQLiteStore: CallStore {
    public func apply(_ mutations: [CallMutation]) throws {
        try Self.storeErrors {
            try CallMutation.validate(mutations)
            try pool.write { db in
                for mutation in mutations { try Self.apply(mutation, db) }
            }
        }
    }

    public func loadLiveState() throws -> CallStateSnapshot {
        try Self.storeErrors {
            try pool.read { db in
                let calls = try Row.fetchAll(db, sql: "SELECT * FROM call WHERE ended_at IS NULL ORDER BY cid")
                let members = try Row.fetchAll(
                    db,
                    sql: """
                        SELECT m.* FROM call_member m JOIN call c ON c.cid = m.cid WHERE c.ended_at IS NULL
                        ORDER BY m.cid, m.added_at, m.user_id
                        """)
                let sessions = try Row.fetchAll(
                    db, sql: "SELECT * FROM call_session WHERE left_at IS NULL ORDER BY joined_at, session_id")
                let connections = try Row.fetchAll(db, sql: "SELECT * FROM client_connection ORDER BY id")
                return CallStateSnapshot(
                    calls: calls.compactMap(Self.callRecord), members: members.compactMap(Self.memberRecord),
                    sessions: sessions.compactMap(Self.sessionRecord), connections: connections.compactMap(Self.connectionRecord))
            }
        }
    }

    public func loadCall(_ cid: CallCID) throws -> (call: CallRecord, members: [MemberRecord])? {
        try Self.storeErrors {
            try pool.read { db in
                guard let call = try Self.fetchCall(cid, db) else { return nil }
                return (call, try Self.fetchMembers(cid, db))
            }
        }
    }

    public func callDetail(_ cid: CallCID, eventLimit: Int) throws -> CallDetail? {
        try Self.storeErrors {
            try pool.read { db in
                guard let call = try Self.fetchCall(cid, db) else { return nil }
                let sessions = try Row.fetchAll(
                    db, sql: "SELECT * FROM call_session WHERE cid = ? ORDER BY joined_at, session_id", arguments: [cid.cid])
                // A negative LIMIT means "no limit" to SQLite.
                let events = try Row.fetchAll(
                    db,
                    sql: """
                        SELECT * FROM (SELECT * FROM call_event WHERE cid = ? ORDER BY seq DESC LIMIT ?) ORDER BY seq
                        """,
                    arguments: [cid.cid, max(0, eventLimit)])
                return CallDetail(
                    call: call, members: try Self.fetchMembers(cid, db), sessions: sessions.compactMap(Self.sessionRecord),
                    events: events.compactMap(Self.eventRecord))
            }
        }
    }

    // MARK: - Writes

    private static func apply(_ mutation: CallMutation, _ db: Database) throws {
        switch mutation {
        case .saveCall(let call): try upsert(call, db)
        case .saveMember(let member): try upsert(member, db)
        case .saveSession(let session): try upsert(session, db)
        case .appendEvent(let event):
            try db.cachedStatement(sql: "INSERT INTO call_event (cid, call_session, at, type, payload) VALUES (?, ?, ?, ?, ?)").execute(arguments: [event.cid.cid, event.callSession, StoredTime.text(event.at), event.type, event.payload.text])
        case .saveConnection(let connection): try upsert(connection, db)
        case .deleteConnection(let id):
            try db.cachedStatement(sql: "DELETE FROM client_connection WHERE id = ?").execute(arguments: [id.rawValue])
        case .savePlacement(let placement): try upsert(placement, db)
        case .deletePlacement(let cid):
            try db.cachedStatement(sql: "DELETE FROM call_placement WHERE call_id = ?").execute(arguments: [cid.cid])
        }
    }

    private static func upsert(_ call: CallRecord, _ db: Database) throws {
        try db.cachedStatement(sql: """
                INSERT INTO call (cid, type, id, created_by, created_at, session, ended_at, ended_reason, rung, auto_cancel_at,
                  empty_deadline, custom)
                VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                ON CONFLICT(cid) DO UPDATE SET created_by = excluded.created_by, created_at = excluded.created_at,
                  session = excluded.session, ended_at = excluded.ended_at, ended_reason = excluded.ended_reason,
                  rung = excluded.rung, auto_cancel_at = excluded.auto_cancel_at, empty_deadline = excluded.empty_deadline,
                  custom = excluded.custom
                """).execute(arguments: [
                call.cid.cid, call.cid.type, call.cid.id, call.createdBy.rawValue, StoredTime.text(call.createdAt), call.session,
                StoredTime.text(call.endedAt), call.endedReason?.rawValue, call.rung, StoredTime.text(call.autoCancelAt),
                StoredTime.text(call.emptyDeadline), call.custom.text,
            ])
    }

    private static func upsert(_ member: MemberRecord, _ db: Database) throws {
        try db.cachedStatement(sql: """
                INSERT INTO call_member (cid, user_id, added_at, ring_state, ring_reason, ring_updated_at, ring_deadline)
                VALUES (?, ?, ?, ?, ?, ?, ?)
                ON CONFLICT(cid, user_id) DO UPDATE SET added_at = excluded.added_at, ring_state = excluded.ring_state,
                  ring_reason = excluded.ring_reason, ring_updated_at = excluded.ring_updated_at,
                  ring_deadline = excluded.ring_deadline
                """).execute(arguments: [
                member.cid.cid, member.userID.rawValue, StoredTime.text(member.addedAt), member.ringState.rawValue, member.ringReason?.rawValue,
                StoredTime.text(member.ringUpdatedAt), StoredTime.text(member.ringDeadline),
            ])
    }

    private static func upsert(_ session: SessionRecord, _ db: Database) throws {
        try db.cachedStatement(sql: """
                INSERT INTO call_session (session_id, cid, call_session, user_id, connection_id, role, joined_at, left_at,
                  left_reason, location, media)
                VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                ON CONFLICT(session_id) DO UPDATE SET cid = excluded.cid, call_session = excluded.call_session,
                  user_id = excluded.user_id, connection_id = excluded.connection_id, role = excluded.role,
                  joined_at = excluded.joined_at, left_at = excluded.left_at, left_reason = excluded.left_reason,
                  location = excluded.location, media = excluded.media
                """).execute(arguments: [
                session.sessionID.rawValue, session.cid.cid, session.callSession, session.userID.rawValue,
                session.connection.rawValue, session.role.rawValue, StoredTime.text(session.joinedAt), StoredTime.text(session.leftAt), session.leftReason,
                try session.location.map { try jsonText($0) }, try mediaText(session.media),
            ])
    }

    private static func upsert(_ connection: ConnectionRecord, _ db: Database) throws {
        try db.cachedStatement(sql: """
                INSERT INTO client_connection (id, user_id, resume_token, connected_at, token_expires_at, detached_at)
                VALUES (?, ?, ?, ?, ?, ?)
                ON CONFLICT(id) DO UPDATE SET user_id = excluded.user_id, resume_token = excluded.resume_token,
                  connected_at = excluded.connected_at, token_expires_at = excluded.token_expires_at,
                  detached_at = excluded.detached_at
                """).execute(arguments: [
                connection.id.rawValue, connection.userID.rawValue, connection.resumeToken, StoredTime.text(connection.connectedAt),
                StoredTime.text(connection.tokenExpiresAt), StoredTime.text(connection.detachedAt),
            ])
    }

    /// A session's media state as JSON, written directly (`JSONEncoder` was a measurable share
    /// of a join's commit); the same keys and values as its `Codable` form, and a non-finite
    /// level refused as the encoder refuses it.
    static func mediaText(_ media: MediaState) throws -> String {
        guard media.audioLevel.isFinite else {
            throw EncodingError.invalidValue(media.audioLevel, EncodingError.Context(codingPath: [], debugDescription: "audio_level is not finite"))
        }
        return JSONValue.object([
            "audio": .bool(media.audio), "audio_level": .number(media.audioLevel), "pinned": .bool(media.pinned),
            "screenshare": .bool(media.screenshare), "speaking": .bool(media.speaking), "video": .bool(media.video),
        ]).text
    }

    private static func jsonText(_ value: some Encodable) throws -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = .sortedKeys
        return String(decoding: try encoder.encode(value), as: UTF8.self)
    }

    /// Runs a store operation, reporting SQLite failures as `unavailable` and keeping
    /// ``SwitchboardError``s as they are.
    static func storeErrors<T>(_ body: () throws -> T) throws -> T {
        do {
            return try body()
        } catch let error as SwitchboardError {
            throw error
        } catch {
            throw SwitchboardError(.unavailable, "call store: \(error)")
        }
    }
}
