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
    public var url: String
    public var region: String?

    public init(id: String, url: String, region: String?) {
        self.id = id
        self.url = url
        self.region = region
    }

    var json: JSONValue {
        .object(["id": .string(id), "url": .string(url), "region": .optional(region)])
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
