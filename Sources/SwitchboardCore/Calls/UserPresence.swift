import Foundation

/// What a ring needs to know of a user beyond the calls and connections one node holds (ADR
/// 0012, step 3): on a cluster whose nodes run calls and hold connections each, the node running
/// a call reads this from the store before a batch that may ring the user.
public struct UserPresence: Sendable, Equatable {
    /// The live calls in which the user holds an active session (busy in any other).
    public var calls: Set<CallCID>
    /// Whether a connection of theirs is attached to a socket, on any node; whether one waits
    /// for a resume.
    public var attached: Bool
    public var resumable: Bool
    /// Their push devices, oldest first.
    public var devices: [DeviceRecord]
    /// The live calls ringing them now (a device that connects gets their `call.ring`).
    public var rings: Set<CallCID>

    public init(
        calls: Set<CallCID> = [], attached: Bool = false, resumable: Bool = false, devices: [DeviceRecord] = [], rings: Set<CallCID> = []
    ) {
        self.calls = calls
        self.rings = rings
        self.attached = attached
        self.resumable = resumable
        self.devices = devices
    }

    /// The rule every store answers by, from its live state: each of `users`, with the live
    /// calls of its active sessions, its connections (attached unless detached), its devices and
    /// the live calls ringing it.
    public static func derive(_ users: Set<UserID>, from snapshot: CallStateSnapshot) -> [UserID: UserPresence] {
        var presence = Dictionary(uniqueKeysWithValues: users.map { ($0, UserPresence()) })
        let live = Set(snapshot.calls.filter(\.isLive).map(\.cid))
        for session in snapshot.sessions where session.leftAt == nil && live.contains(session.cid) && users.contains(session.userID) {
            presence[session.userID]?.calls.insert(session.cid)
        }
        for connection in snapshot.connections where users.contains(connection.userID) {
            if connection.detachedAt == nil { presence[connection.userID]?.attached = true } else { presence[connection.userID]?.resumable = true }
        }
        for device in snapshot.devices where users.contains(device.userID) { presence[device.userID]?.devices.append(device) }
        for member in snapshot.members where member.ringState == .ringing && live.contains(member.cid) && users.contains(member.userID) {
            presence[member.userID]?.rings.insert(member.cid)
        }
        return presence
    }
}

extension CallStore {
    /// ``UserPresence`` of each of `users`, derived from the live state (a store with a cheaper
    /// read answers the same: ``CallStoreContract`` holds it to this).
    public func presence(of users: Set<UserID>) throws -> [UserID: UserPresence] {
        guard !users.isEmpty else { return [:] }
        return UserPresence.derive(users, from: try loadLiveState())
    }
}

extension CallGateway {
    /// For this batch, what the store knows of users it may ring (busy elsewhere, connected or
    /// resumable on another node, their devices), cleared with the refusals.
    public mutating func know(_ presence: [UserID: UserPresence]) {
        engine.presence.merge(presence) { _, new in new }
    }

    /// For this batch, calls run elsewhere that ring a user whose device connects now (read from
    /// the store): their `call.ring` goes to it with the rings of this node's calls.
    public mutating func know(rings details: [CallDetail]) {
        for detail in details where !holds(detail.call.cid) {
            guard let settings = configuration.types[detail.call.cid.type] else { continue }
            let active = detail.sessions.filter { $0.callSession == detail.call.session && $0.leftAt == nil }
            engine.knownRings[detail.call.cid] = LiveCall(record: detail.call, settings: settings, members: detail.members, sessions: active)
        }
    }

    /// The users the requests may ring: the members a ringing `call.join` or
    /// `call.get_or_create` names, and those of its call in memory.
    public func usersRung(by requests: [ClientRequest]) -> Set<UserID> {
        var users = Set<UserID>()
        for request in requests {
            switch request {
            case .join(let cid, _, true, let members, _), .getOrCreate(let cid, let members, true, _):
                users.formUnion(members)
                users.formUnion(engine.call(cid)?.members.keys ?? [:].keys)
            default:
                continue
            }
        }
        return users
    }
}
