import Foundation
import PostgresNIO
import SwitchboardCore

/// Which node holds each client connection (ADR 0012, step 3; ConnectionHolding.swift), for a
/// store made one node's (``ownCalls(as:)``); a store of one daemon answers as every store of
/// one daemon does (nothing to take over, nothing lost).
extension PostgresStore {
    public func takeConnection(resumeToken: String, user: UserID) throws -> ConnectionTakeover? {
        guard let node = callOwnership?.node else { return nil }
        var binds = PostgresBindings()
        binds.append(resumeToken)
        binds.append(user.rawValue)
        binds.append(node)
        return try write { connection in
            // The previous holder read under the row's lock, in the statement that moves it.
            let rows = try connection.query(
                """
                WITH previous AS (
                  SELECT id, node FROM client_connection WHERE resume_token = $1 AND user_id = $2 ORDER BY id LIMIT 1 FOR UPDATE)
                UPDATE client_connection c SET node = $3 FROM previous p WHERE c.id = p.id
                RETURNING c.*, p.node AS previous
                """, binds)
            guard let row = rows.first, let record = Rows.connection(row) else { return nil }
            let previous = try row.makeRandomAccess()["previous"].decode(String?.self)
            var byConnection = PostgresBindings()
            byConnection.append(record.id.rawValue)
            let sessions = try connection.query(
                """
                SELECT s.* FROM call_session s JOIN call c ON c.cid = s.cid
                WHERE s.connection_id = $1 AND s.left_at IS NULL AND c.ended_at IS NULL ORDER BY s.joined_at, s.session_id
                """, byConnection
            ).compactMap(Rows.session)
            return ConnectionTakeover(record: record, previous: previous, sessions: sessions)
        }
    }

    public func lostConnections(_ ids: Set<ClientConnectionID>, after window: Duration) throws -> Set<ClientConnectionID> {
        guard callOwnership != nil, !ids.isEmpty else { return [] }
        var binds = PostgresBindings()
        binds.append(ids.map(\.rawValue).sorted())
        binds.append(Int64(window.components.seconds * 1000 + window.components.attoseconds / 1_000_000_000_000_000))
        // Lost: no row, or a row whose node is not registered or lapsed at least the window ago
        // (a row no node stamped is held by whichever daemon restored it).
        let lost = try session.withConnection { connection in
            try connection.query(
                """
                SELECT x FROM unnest($1::text[]) AS x
                WHERE NOT EXISTS (
                  SELECT 1 FROM client_connection c WHERE c.id = x AND (c.node IS NULL OR EXISTS (
                    SELECT 1 FROM node n WHERE n.id = c.node AND n.lease_until > now() - $2 * interval '1 millisecond')))
                """, binds
            ).map { try $0.decode(String.self) }
        }
        return Set(lost.map(ClientConnectionID.init))
    }
}
