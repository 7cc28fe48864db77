import Foundation

/// A live call's room on an SFU with rooms (Janus), as the store holds it: the room its
/// placement names and the call's sessions that have not left. A cluster's room reconciler
/// reads these (ADR 0012): the leader's memory holds only the calls it runs, and rooms made
/// from it would leave out, and so delete, the rooms of other nodes' calls.
public struct LiveRoom: Sendable, Equatable {
    public var cid: CallCID
    public var sfu: SFUID
    public var room: UInt64
    /// In order.
    public var sessions: [SessionID]

    public init(cid: CallCID, sfu: SFUID, room: UInt64, sessions: [SessionID]) {
        self.cid = cid
        self.sfu = sfu
        self.room = room
        self.sessions = sessions
    }

    /// The one rule: every live call placed with a room, with its sessions that have not left,
    /// by cid. Stores that answer with a query of their own are held to it by a contract.
    public static func derive(state: CallStateSnapshot, placements: [PlacementRecord]) -> [LiveRoom] {
        let live = Set(state.calls.filter(\.isLive).map(\.cid))
        var sessions: [CallCID: [SessionID]] = [:]
        for session in state.sessions where session.leftAt == nil { sessions[session.cid, default: []].append(session.sessionID) }
        return placements.compactMap { placement -> LiveRoom? in
            guard let room = placement.room, let cid = CallCID(cid: placement.callID), live.contains(cid) else { return nil }
            return LiveRoom(cid: cid, sfu: placement.sfu, room: room, sessions: (sessions[cid] ?? []).sorted())
        }.sorted { $0.cid.cid.utf8.lexicographicallyPrecedes($1.cid.cid.utf8) }
    }

    /// What each SFU's rooms should hold, as the reconciler takes it: each room sized by its
    /// call type's participant limit (`publishers(type)`).
    public static func desired(_ rooms: [LiveRoom], publishers: (String) -> Int) -> [SFUID: [DesiredRoom]] {
        var desired: [SFUID: [DesiredRoom]] = [:]
        for room in rooms {
            desired[room.sfu, default: []].append(
                DesiredRoom(room: room.room, call: room.cid.cid, publishers: publishers(room.cid.type), sessions: room.sessions))
        }
        return desired
    }
}

/// A store that says which live calls hold rooms on which SFUs (``LiveRoom``).
public protocol LiveRoomReading: Sendable {
    func liveRooms() throws -> [LiveRoom]
}

extension LiveRoomReading where Self: CallStore & SFUStore {
    /// Derived from the whole live state and every placement (``LiveRoom/derive(state:placements:)``).
    public func liveRooms() throws -> [LiveRoom] {
        LiveRoom.derive(state: try loadLiveState(), placements: try allPlacements())
    }
}
