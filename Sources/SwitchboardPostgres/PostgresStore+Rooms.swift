import Foundation
import PostgresNIO
import SwitchboardCore

/// The rooms live calls hold, read with one query (the default derives them from the whole
/// live state): the same answer, held to it by `LiveRoomContract`.
extension PostgresStore: LiveRoomReading {
    public func liveRooms() throws -> [LiveRoom] {
        try session.withConnection { connection in
            var rooms: [LiveRoom] = []
            for row in try connection.query(
                """
                SELECT p.call_id, p.sfu_id, p.room, s.session_id FROM call_placement p
                JOIN call c ON c.cid = p.call_id AND c.ended_at IS NULL
                LEFT JOIN call_session s ON s.cid = p.call_id AND s.left_at IS NULL
                WHERE p.room IS NOT NULL ORDER BY p.call_id
                """)
            {
                let (call, sfu, room, session) = try row.decode((String, String, Int64, String?).self)
                guard let cid = CallCID(cid: call), let id = SFUID(sfu) else { continue }
                if rooms.last?.cid != cid { rooms.append(LiveRoom(cid: cid, sfu: id, room: UInt64(bitPattern: room), sessions: [])) }
                if let session = session.map(SessionID.init) { rooms[rooms.count - 1].sessions.append(session) }
            }
            for index in rooms.indices { rooms[index].sessions.sort() }
            return rooms
        }
    }
}
