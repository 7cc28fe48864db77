import Foundation

/// Who is asking: the verified user behind a client connection, with what the token allows.
public struct CallActor: Sendable, Equatable {
    public var user: UserID
    public var connection: ClientConnectionID
    /// The only cids the token may touch; `nil` for any.
    public var allowedCIDs: Set<String>?
    /// The token's role is `admin`: may end any call and join members-only calls.
    public var isAdmin: Bool

    public init(user: UserID, connection: ClientConnectionID, allowedCIDs: Set<String>? = nil, isAdmin: Bool = false) {
        self.user = user
        self.connection = connection
        self.allowedCIDs = allowedCIDs
        self.isAdmin = isAdmin
    }

    /// Whether the token lets this actor touch `cid`.
    public func may(touch cid: CallCID) -> Bool {
        allowedCIDs?.contains(cid.cid) ?? true
    }
}

/// An event for some set of client connections.
public struct CallNotice: Sendable, Equatable {
    /// Connections to reach directly (participants of a call, a session's connection).
    public var connections: Set<ClientConnectionID>
    /// Users whose every connection is reached.
    public var users: Set<UserID>
    /// One connection to leave out (the device that caused the event).
    public var except: ClientConnectionID?
    /// The event's wire type (`call.ring`, `call.participant_joined`, …).
    public var type: String
    public var cid: CallCID?
    public var data: JSONValue

    public init(
        type: String, cid: CallCID?, data: JSONValue, connections: Set<ClientConnectionID> = [], users: Set<UserID> = [],
        except: ClientConnectionID? = nil
    ) {
        self.type = type
        self.cid = cid
        self.data = data
        self.connections = connections
        self.users = users
        self.except = except
    }
}

/// Something that happened that metrics count.
public enum CallMetricEvent: Sendable, Equatable {
    case callStarted
    case callEnded(CallEndReason)
    case joined
    /// A ring reached a final state; `answeredAfter` is set for accept and reject.
    case ringOutcome(String, answeredAfter: Duration?)
}

/// What the call engine asks its host to do: commit these mutations, then deliver these
/// notices, release these placements and count these events.
public struct CallOutput: Sendable, Equatable {
    public var mutations: [CallMutation] = []
    public var notices: [CallNotice] = []
    /// Calls that ended: their SFU placement went in `mutations` and can leave the directory.
    public var releasedPlacements: [CallCID] = []
    /// New placements, also in `mutations`: the directory adopts them after the commit.
    public var placed: [PlacementRecord] = []
    /// Joins refused because no SFU could take the call, by the rejection most SFUs shared.
    public var placementRefusals: [PlacementCandidate.Rejection?] = []
    public var metrics: [CallMetricEvent] = []

    public init() {}

    public var isEmpty: Bool {
        mutations.isEmpty && notices.isEmpty && releasedPlacements.isEmpty && placed.isEmpty && placementRefusals.isEmpty && metrics.isEmpty
    }
}

/// An SFU as a call's participants see it.
public struct SFUAssignment: Sendable, Equatable {
    public var id: String
    public var kind: SFUKind
    public var url: String
    public var region: String?
    /// Kinds with rooms (Janus): the call's room there, and the keys that grant its sessions entry.
    public var room: SFURoomGrant?

    public init(id: String, kind: SFUKind = .heartbeat, url: String, region: String?, room: SFURoomGrant? = nil) {
        self.id = id
        self.kind = kind
        self.url = url
        self.region = region
        self.room = room
    }

    /// The assignment for `cid` on `node`: a Janus node gets the call's room.
    public init(_ node: SFUNode, cid: String, keys: SFURoomKeys?) {
        self.init(id: node.id.rawValue, kind: node.kind, url: node.url, region: node.region)
        if node.kind == .janus, let keys { room = SFURoomGrant(id: keys.roomID(call: cid, sfu: node.id), keys: keys) }
    }

    /// As everyone sees it (call state, events, the log): no token.
    var json: JSONValue {
        var fields: [String: JSONValue] = ["id": .string(id), "kind": .string(kind.rawValue), "url": .string(url), "region": .optional(region)]
        if let room { fields["room"] = .number(Double(room.id)) }
        return .object(fields)
    }

    /// As one participant session gets it: with its own access token and the room's PIN where
    /// the kind has rooms.
    func json(for session: SessionID) -> JSONValue {
        guard let room, case .object(var fields) = json else { return json }
        fields["token"] = .string(room.keys.token(room: room.id, session: session))
        fields["pin"] = .string(room.keys.roomPIN(room.id))
        return .object(fields)
    }
}

/// A call's room on an SFU, and the keys its session tokens are made with.
public struct SFURoomGrant: Sendable, Equatable {
    public var id: UInt64
    public var keys: SFURoomKeys

    public init(id: UInt64, keys: SFURoomKeys) {
        self.id = id
        self.keys = keys
    }
}

/// How a join gets its call's SFU: a decision only, recorded in `out` (a
/// ``CallMutation/savePlacement(_:)`` committed with the rest of the batch). `nil` when no SFU
/// is defined at all (calls are then peer-to-peer); `no_sfu_available` when SFUs exist but
/// none can take it. ``SFUTable`` is the production placer.
public protocol CallPlacer {
    /// The SFU for `cid`; `current` is the one the live call has now (sticky unless it is gone).
    func place(
        _ cid: CallCID, participants: [LocationHint], current: SFUAssignment?, now: Date, out: inout CallOutput
    ) throws(SwitchboardError) -> SFUAssignment?
}

/// Where a call host gets a placer for each batch, and tells what the batch committed.
public protocol PlacementSource: Sendable {
    /// The placer for the next batch: a snapshot, read once per batch.
    func placer() -> any CallPlacer
    /// The SFU a call is placed on, from the durable placements (restart rebuild).
    func current(_ cid: CallCID) -> SFUAssignment?
    /// A batch committed: its placements, releases and refusals are now true.
    func committed(placed: [PlacementRecord], released: [CallCID], refusals: [PlacementCandidate.Rejection?])
}
