import Foundation
import PostgresNIO
import SwitchboardCore

/// What a ring needs to know of its users, read for them alone (the default derives it from the
/// whole live state): the same answer, held to it by `CallStoreContract`.
extension PostgresStore {
    public func presence(of users: Set<UserID>) throws -> [UserID: UserPresence] {
        guard !users.isEmpty else { return [:] }
        var binds = PostgresBindings()
        binds.append(users.map(\.rawValue).sorted())
        return try session.withConnection { connection in
            var presence = Dictionary(uniqueKeysWithValues: users.map { ($0, UserPresence()) })
            for row in try connection.query(
                """
                SELECT DISTINCT s.user_id, s.cid FROM call_session s JOIN call c ON c.cid = s.cid
                WHERE s.user_id = ANY($1::text[]) AND s.left_at IS NULL AND c.ended_at IS NULL
                """, binds)
            {
                let (user, cid) = try row.decode((String, String).self)
                guard let id = UserID(user), let call = CallCID(cid: cid) else { continue }
                presence[id]?.calls.insert(call)
            }
            for row in try connection.query(
                "SELECT user_id, bool_or(detached_at IS NULL), bool_or(detached_at IS NOT NULL) FROM client_connection WHERE user_id = ANY($1::text[]) GROUP BY user_id",
                binds)
            {
                let (user, attached, resumable) = try row.decode((String, Bool, Bool).self)
                guard let id = UserID(user) else { continue }
                presence[id]?.attached = attached
                presence[id]?.resumable = resumable
            }
            for device in try connection.query(
                "SELECT * FROM device WHERE user_id = ANY($1::text[]) ORDER BY created_at, token, provider", binds
            ).compactMap(Rows.device) {
                presence[device.userID]?.devices.append(device)
            }
            for row in try connection.query(
                """
                SELECT m.user_id, m.cid FROM call_member m JOIN call c ON c.cid = m.cid
                WHERE m.user_id = ANY($1::text[]) AND m.ring_state = 'ringing' AND c.ended_at IS NULL
                """, binds)
            {
                let (user, cid) = try row.decode((String, String).self)
                guard let id = UserID(user), let call = CallCID(cid: cid) else { continue }
                presence[id]?.rings.insert(call)
            }
            return presence
        }
    }
}
