import Foundation
import GRDB
import SwitchboardCore

/// Call history (`GET /v1/calls`) and the decoding of call rows.
extension SQLiteStore {
    public func listCalls(_ query: CallQuery) throws -> CallPage {
        let after = try query.cursor.map(Self.decodeCallCursor)
        let limit = query.limit.clamped(to: CallQuery.limits)
        try fold()
        return try Self.storeErrors {
            try pool.read { db in
                let (filter, arguments) = Self.callFilter(query, after: after)
                // One row more than the page shows whether there is a next page.
                let rows = try Row.fetchAll(
                    db, sql: "SELECT * FROM call \(filter) ORDER BY created_at DESC, cid DESC LIMIT ?",
                    arguments: arguments + [limit + 1])
                let page = rows.prefix(limit)
                let next = rows.count > limit ? page.last.map(Self.callCursor) : nil
                return CallPage(calls: page.compactMap(Self.callRecord), next: next)
            }
        }
    }

    /// The `WHERE` clause of a history query and its arguments.
    private static func callFilter(_ query: CallQuery, after: CallCursor?) -> (String, StatementArguments) {
        var clauses: [String] = []
        var arguments: StatementArguments = []
        switch query.state {
        case .live?: clauses.append("ended_at IS NULL")
        case .ended?: clauses.append("ended_at IS NOT NULL")
        case nil: break
        }
        if let type = query.type {
            clauses.append("type = ?")
            arguments += [type]
        }
        if let member = query.member {
            clauses.append("no IN (SELECT call_no FROM call_member WHERE user_id = ?)")
            arguments += [member.rawValue]
        }
        if let from = query.createdFrom {
            clauses.append("created_at >= ?")
            arguments += [from]
        }
        if let before = query.createdBefore {
            clauses.append("created_at < ?")
            arguments += [before]
        }
        if let after {
            // Compared as the stored text, so a page never repeats or skips a row at its edge.
            clauses.append("(created_at < ? OR (created_at = ? AND cid < ?))")
            arguments += [after.createdAt, after.createdAt, after.cid]
        }
        return (clauses.isEmpty ? "" : "WHERE " + clauses.joined(separator: " AND "), arguments)
    }

    // MARK: - Cursors

    /// The last row of a page: its stored `created_at` text and its cid.
    struct CallCursor: Equatable {
        var createdAt: String
        var cid: String
    }

    private static func callCursor(_ row: Row) -> String {
        let createdAt: String = row["created_at"]
        let cid: String = row["cid"]
        let base64 = Data("\(createdAt)|\(cid)".utf8).base64EncodedString()
        return base64.replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
            .replacingOccurrences(of: "=", with: "")
    }

    static func decodeCallCursor(_ text: String) throws -> CallCursor {
        let invalid = SwitchboardError(.invalidRequest, "invalid cursor")
        var base64 = text.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        base64 += String(repeating: "=", count: (4 - base64.utf8.count % 4) % 4)
        guard !text.isEmpty, let data = Data(base64Encoded: base64), let decoded = String(data: data, encoding: .utf8) else {
            throw invalid
        }
        let parts = decoded.split(separator: "|", omittingEmptySubsequences: false).map(String.init)
        guard parts.count == 2, CallCID(cid: parts[1]) != nil, Date.fromDatabaseValue(parts[0].databaseValue) != nil else {
            throw invalid
        }
        return CallCursor(createdAt: parts[0], cid: parts[1])
    }

    // MARK: - Rows

    /// A call's row and its number (`call.no`), which keys its members, sessions and events.
    static func fetchCall(_ cid: CallCID, _ db: Database) throws -> (record: CallRecord, number: Int64)? {
        guard let row = try Row.fetchOne(db.cachedStatement(sql: "SELECT * FROM call WHERE no = (SELECT no FROM call_key WHERE cid = ?)"), arguments: [cid.cid]),
            let record = callRecord(row)
        else { return nil }
        return (record, row["no"])
    }

    static func fetchMembers(_ callNumber: Int64, _ db: Database) throws -> [MemberRecord] {
        try Row.fetchAll(
            db.cachedStatement(sql: "SELECT * FROM call_member WHERE call_no = ? ORDER BY added_at, user_id"), arguments: [callNumber]
        ).compactMap(memberRecord)
    }

    static func callRecord(_ row: Row) -> CallRecord? {
        guard let cid = CallCID(cid: row["cid"]), let createdBy = UserID(row["created_by"]) else { return nil }
        let reason: String? = row["ended_reason"]
        let custom: String? = row["custom"]
        let eventSeq: Int64? = row["event_seq"]
        return CallRecord(
            cid: cid, createdBy: createdBy, createdAt: row["created_at"], session: row["session"], endedAt: row["ended_at"],
            endedReason: reason.flatMap(CallEndReason.init(rawValue:)), rung: row["rung"], autoCancelAt: row["auto_cancel_at"],
            emptyDeadline: row["empty_deadline"], custom: JSONValue.parse(text: custom), eventSeq: eventSeq ?? 0)
    }

    static func memberRecord(_ row: Row) -> MemberRecord? {
        guard let cid = CallCID(cid: row["cid"]), let user = UserID(row["user_id"]), let state = RingState(rawValue: row["ring_state"])
        else { return nil }
        let reason: String? = row["ring_reason"]
        return MemberRecord(
            cid: cid, userID: user, addedAt: row["added_at"], ringState: state, ringReason: reason.flatMap(RejectReason.init(rawValue:)),
            ringUpdatedAt: row["ring_updated_at"], ringDeadline: row["ring_deadline"])
    }

    static func sessionRecord(_ row: Row) -> SessionRecord? {
        guard let cid = CallCID(cid: row["cid"]), let user = UserID(row["user_id"]), let role = ParticipantRole(rawValue: row["role"])
        else { return nil }
        let location: String? = row["location"]
        let media: String = row["media"]
        return SessionRecord(
            sessionID: SessionID(row["session_id"]), cid: cid, callSession: row["call_session"], userID: user,
            connection: ClientConnectionID(row["connection_id"]), role: role, joinedAt: row["joined_at"], leftAt: row["left_at"],
            leftReason: row["left_reason"], location: location.flatMap { decodeJSON(LocationHint.self, $0) },
            media: decodeJSON(MediaState.self, media) ?? MediaState())
    }

    static func eventRecord(_ row: Row) -> CallEventRecord? {
        guard let cid = CallCID(cid: row["cid"]) else { return nil }
        let payload: String? = row["payload"]
        return CallEventRecord(cid: cid, callSession: row["call_session"], at: row["at"], type: row["type"], payload: JSONValue.parse(text: payload))
    }

    static func connectionRecord(_ row: Row) -> ConnectionRecord? {
        guard let user = UserID(row["user_id"]) else { return nil }
        return ConnectionRecord(
            id: ClientConnectionID(row["id"]), userID: user, resumeToken: row["resume_token"], connectedAt: row["connected_at"],
            tokenExpiresAt: row["token_expires_at"], detachedAt: row["detached_at"])
    }

    private static func decodeJSON<T: Decodable>(_ type: T.Type, _ text: String) -> T? {
        try? JSONDecoder().decode(type, from: Data(text.utf8))
    }
}
