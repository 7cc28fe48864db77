import Foundation
import GRDB
import SwitchboardCore

/// The call store in SQLite: `call`, `call_member`, `call_session`, `call_event` and
/// `client_connection` (migration `v6_calls`), and the webhook outbox and push devices the same
/// batches write (migration `v10_webhooks`, read in `SQLiteStore+Webhooks.swift`). Row decoding
/// and history queries are in `SQLiteStore+CallQueries.swift`.
extension SQLiteStore: CallStore {
    public func apply(_ mutations: [CallMutation]) throws {
        try Self.storeErrors {
            try CallMutation.validate(mutations)
            let rows = try mutations.flatMap(StoredRow.rows)
            if let log {
                try log.append(rows)
            } else {
                try pool.write { db in
                    try StoredRow.execute(rows, in: db)
                }
            }
        }
    }

    public func loadLiveState() throws -> CallStateSnapshot {
        try fold()
        return try Self.storeErrors {
            try pool.read { db in
                let calls = try Row.fetchAll(db, sql: "SELECT * FROM call WHERE ended_at IS NULL ORDER BY cid")
                let members = try Row.fetchAll(
                    db,
                    sql: """
                        SELECT m.* FROM call_member m JOIN call c ON c.no = m.call_no WHERE c.ended_at IS NULL
                        ORDER BY m.cid, m.added_at, m.user_id
                        """)
                let sessions = try Row.fetchAll(
                    db, sql: "SELECT * FROM call_session WHERE left_at IS NULL ORDER BY joined_at, session_id")
                let connections = try Row.fetchAll(db, sql: "SELECT * FROM client_connection ORDER BY id")
                let devices = try Row.fetchAll(db, sql: "SELECT * FROM device ORDER BY created_at, token, provider")
                return CallStateSnapshot(
                    calls: calls.compactMap(Self.callRecord), members: members.compactMap(Self.memberRecord),
                    sessions: sessions.compactMap(Self.sessionRecord), connections: connections.compactMap(Self.connectionRecord),
                    devices: devices.compactMap(Self.deviceRecord))
            }
        }
    }

    public func loadCall(_ cid: CallCID) throws -> (call: CallRecord, members: [MemberRecord])? {
        try foldIfPending(cid)
        return try Self.storeErrors {
            try pool.read { db in
                guard let call = try Self.fetchCall(cid, db) else { return nil }
                return (call.record, try Self.fetchMembers(call.number, db))
            }
        }
    }

    public func callDetail(_ cid: CallCID, eventLimit: Int) throws -> CallDetail? {
        try fold()
        return try Self.storeErrors {
            try pool.read { db in
                guard let call = try Self.fetchCall(cid, db) else { return nil }
                let sessions = try Row.fetchAll(
                    db, sql: "SELECT * FROM call_session WHERE call_no = ? ORDER BY joined_at, session_id", arguments: [call.number])
                // A negative LIMIT means "no limit" to SQLite.
                let events = try Row.fetchAll(
                    db,
                    sql: """
                        SELECT * FROM (SELECT * FROM call_event WHERE call_no = ? ORDER BY seq DESC LIMIT ?) ORDER BY seq
                        """,
                    arguments: [call.number, max(0, eventLimit)])
                return CallDetail(
                    call: call.record, members: try Self.fetchMembers(call.number, db), sessions: sessions.compactMap(Self.sessionRecord),
                    events: events.compactMap(Self.eventRecord))
            }
        }
    }

    public func lastEvent(of cid: CallCID, type: String) throws -> CallEventRecord? {
        try foldIfPending(cid)
        return try Self.storeErrors {
            try pool.read { db in
                try Row.fetchOne(
                    db,
                    sql: """
                        SELECT * FROM call_event WHERE call_no = (SELECT no FROM call_key WHERE cid = ?) AND type = ?
                        ORDER BY seq DESC LIMIT 1
                        """,
                    arguments: [cid.cid, type]
                ).flatMap(Self.eventRecord)
            }
        }
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
