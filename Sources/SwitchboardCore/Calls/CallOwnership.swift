import Foundation

/// The node that runs a call, and the generation of its hold: one more each time another node
/// takes the call over (ADR 0012, step 3).
public struct CallOwner: Sendable, Equatable, CustomStringConvertible {
    public var node: String
    public var generation: Int64

    public init(node: String, generation: Int64) {
        self.node = node
        self.generation = generation
    }

    public var description: String { "node \(node) (generation \(generation))" }
}

/// Which node runs each call, on a store several daemons share (ADR 0012, step 3). A node runs
/// a call only after it claimed it, and loads the call from the store after the claim, never
/// before: what the previous owner wrote up to the takeover is then what it reads. The store
/// refuses a write of the node touching a call it does not hold at the generation it claimed
/// (``CallMutation/calls(in:)`` names the calls of a batch), so a node that lost a call writes
/// nothing more to it. A node holds its calls while its own lease runs: no renewal per call.
///
/// One daemon (SQLite) owns every call and needs none of this.
public protocol CallOwnership: Sendable {
    /// The node this ownership claims for.
    var node: String { get }
    /// Takes each of `cids` that no live node holds (nobody held it: generation 1; a node whose
    /// lease lapsed: its generation + 1; this node: unchanged) and returns the owner of each
    /// afterwards, this node or the live node that keeps it.
    func claim(_ cids: [CallCID]) throws -> [CallCID: CallOwner]
    /// Gives up the calls of `cids` this node holds (out of its memory); other nodes' holds stay.
    func release(_ cids: [CallCID]) throws
    /// The owners of `cids` as the store holds them; a call nobody claimed is absent.
    func owners(of cids: [CallCID]) throws -> [CallCID: CallOwner]
    /// Whether this node holds `cid` as far as it knows: claimed, and neither released nor found
    /// taken over by a refused write (no round trip).
    func holds(_ cid: CallCID) -> Bool
    /// Every call this node holds as far as it knows (``holds(_:)``).
    var held: Set<CallCID> { get }
    /// Live calls no live node holds (nobody claimed them, or their owner's lease lapsed), by
    /// cid, at most `limit`: a node adopts them so that their deadlines (rings, resume windows,
    /// empty calls) still pass when nobody asks for them.
    func orphans(limit: Int) throws -> [CallCID]
}

extension CallOwnership {
    /// The calls of `cids` another live node holds, after claiming them all for this node.
    public func claimOrReport(_ cids: [CallCID]) throws -> [CallCID: CallOwner] {
        try claim(cids).filter { $0.value.node != node }
    }
}

extension CallMutation {
    /// The cids of the calls a batch writes to: its owner must hold each.
    public static func calls(in mutations: [CallMutation]) -> Set<String> {
        var cids = Set<String>()
        for mutation in mutations {
            switch mutation {
            case .saveCall(let call): cids.insert(call.cid.cid)
            case .saveMember(let member): cids.insert(member.cid.cid)
            case .saveSession(let session): cids.insert(session.cid.cid)
            case .appendEvent(let event): cids.insert(event.cid.cid)
            case .savePlacement(let placement): cids.insert(placement.callID)
            case .deletePlacement(let cid): cids.insert(cid.cid)
            case .saveConnection, .deleteConnection, .enqueueWebhook, .saveWebhookDelivery, .saveWebhookEndpoint, .saveDevice, .deleteDevice:
                break
            }
        }
        return cids
    }
}

extension SwitchboardError {
    /// A request for a call another node runs (until requests are forwarded to it).
    public static func heldElsewhere(_ cid: CallCID, by owner: CallOwner) -> SwitchboardError {
        SwitchboardError(.unavailable, "call \(cid) is run by \(owner) now; try again")
    }
}
