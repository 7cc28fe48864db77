import Foundation
import PostgresNIO
import SwitchboardCore

/// The call store's reads on PostgreSQL: the live state at start, one call, history pages, a
/// call's detail and its last event of a type; ordered as the SQLite store orders them (ties by
/// identifier, compared byte for byte).
extension PostgresStore: CallStore {
    public func loadLiveState() throws -> CallStateSnapshot {
        try session.withConnection { connection in
            let calls = try connection.query("SELECT * FROM call WHERE ended_at IS NULL ORDER BY cid").compactMap(Rows.call)
            let members = try connection.query(
                """
                SELECT m.* FROM call_member m JOIN call c ON c.cid = m.cid WHERE c.ended_at IS NULL ORDER BY m.cid, m.added_at, m.user_id
                """
            ).compactMap(Rows.member)
            let sessions = try connection.query("SELECT * FROM call_session WHERE left_at IS NULL ORDER BY joined_at, session_id")
                .compactMap(Rows.session)
            let connections = try connection.query("SELECT * FROM client_connection ORDER BY id").compactMap(Rows.connection)
            let devices = try connection.query("SELECT * FROM device ORDER BY created_at, token, provider").compactMap(Rows.device)
            return CallStateSnapshot(calls: calls, members: members, sessions: sessions, connections: connections, devices: devices)
        }
    }

    public func loadCall(_ cid: CallCID) throws -> (call: CallRecord, members: [MemberRecord])? {
        try session.withConnection { connection in
            guard let call = try Self.fetchCall(cid, connection) else { return nil }
            return (call, try Self.fetchMembers(cid, connection))
        }
    }

    public func listCalls(_ query: CallQuery) throws -> CallPage {
        let after = try query.cursor.map(Self.decodeCallCursor)
        let limit = query.limit.clamped(to: CallQuery.limits)
        var clauses: [String] = []
        var binds = PostgresBindings()
        func bind(_ clause: (Int) -> String, _ value: String) {
            binds.append(value)
            clauses.append(clause(binds.count))
        }
        func bind(_ clause: (Int) -> String, _ value: Date) {
            binds.append(value)
            clauses.append(clause(binds.count))
        }
        switch query.state {
        case .live?: clauses.append("ended_at IS NULL")
        case .ended?: clauses.append("ended_at IS NOT NULL")
        case nil: break
        }
        if let type = query.type { bind({ "type = $\($0)" }, type) }
        if let member = query.member { bind({ "cid IN (SELECT cid FROM call_member WHERE user_id = $\($0))" }, member.rawValue) }
        if let from = query.createdFrom { bind({ "created_at >= $\($0)" }, PostgresTime.bind(from)) }
        if let before = query.createdBefore { bind({ "created_at < $\($0)" }, PostgresTime.bind(before)) }
        if let after {
            binds.append(PostgresTime.date(milliseconds: after.createdAt))
            binds.append(after.cid)
            clauses.append("(created_at, cid) < ($\(binds.count - 1), $\(binds.count))")
        }
        binds.append(Int64(limit + 1))
        let filter = clauses.isEmpty ? "" : "WHERE " + clauses.joined(separator: " AND ")
        // One row more than the page shows whether there is a next page.
        let calls = try session.withConnection { connection in
            try connection.query("SELECT * FROM call \(filter) ORDER BY created_at DESC, cid DESC LIMIT $\(binds.count)", binds).compactMap(Rows.call)
        }
        let page = Array(calls.prefix(limit))
        let next = calls.count > limit ? page.last.map { OpaqueCursor.encode(["\(PostgresTime.milliseconds($0.createdAt))", $0.cid.cid]) } : nil
        return CallPage(calls: page, next: next)
    }

    public func callDetail(_ cid: CallCID, eventLimit: Int) throws -> CallDetail? {
        try session.withConnection { connection in
            guard let call = try Self.fetchCall(cid, connection) else { return nil }
            var byCall = PostgresBindings()
            byCall.append(cid.cid)
            let sessions = try connection.query("SELECT * FROM call_session WHERE cid = $1 ORDER BY joined_at, session_id", byCall)
                .compactMap(Rows.session)
            var events = PostgresBindings()
            events.append(cid.cid)
            events.append(Int64(max(0, eventLimit)))
            let last = try connection.query(
                "SELECT * FROM (SELECT * FROM call_event WHERE cid = $1 ORDER BY seq DESC LIMIT $2) AS last ORDER BY seq", events
            ).compactMap(Rows.event)
            return CallDetail(call: call, members: try Self.fetchMembers(cid, connection), sessions: sessions, events: last)
        }
    }

    public func lastEvent(of cid: CallCID, type: String) throws -> CallEventRecord? {
        var binds = PostgresBindings()
        binds.append(cid.cid)
        binds.append(type)
        return try session.withConnection { connection in
            try connection.query("SELECT * FROM call_event WHERE cid = $1 AND type = $2 ORDER BY seq DESC LIMIT 1", binds).first.flatMap(Rows.event)
        }
    }

    /// Every stored placement, by call (the SFU directory reads them at start).
    public func allPlacements() throws -> [PlacementRecord] {
        try session.withConnection { connection in
            try connection.query("SELECT * FROM call_placement ORDER BY call_id").compactMap(Rows.placement)
        }
    }

    private static func fetchCall(_ cid: CallCID, _ connection: PostgresSession.Connection) throws -> CallRecord? {
        var binds = PostgresBindings()
        binds.append(cid.cid)
        return try connection.query("SELECT * FROM call WHERE cid = $1", binds).first.flatMap(Rows.call)
    }

    private static func fetchMembers(_ cid: CallCID, _ connection: PostgresSession.Connection) throws -> [MemberRecord] {
        var binds = PostgresBindings()
        binds.append(cid.cid)
        return try connection.query("SELECT * FROM call_member WHERE cid = $1 ORDER BY added_at, user_id", binds).compactMap(Rows.member)
    }

    /// A history page's last call: its creation time in milliseconds and its cid.
    struct CallCursor {
        var createdAt: Int64
        var cid: String
    }

    static func decodeCallCursor(_ text: String) throws(SwitchboardError) -> CallCursor {
        let parts: [String]
        do {
            parts = try OpaqueCursor.decode(text, count: 2)
        } catch {
            throw SwitchboardError(.invalidRequest, "invalid cursor")
        }
        guard let millis = Int64(parts[0]), CallCID(cid: parts[1]) != nil else { throw SwitchboardError(.invalidRequest, "invalid cursor") }
        return CallCursor(createdAt: millis, cid: parts[1])
    }
}
