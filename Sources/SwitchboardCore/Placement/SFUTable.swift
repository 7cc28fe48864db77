import Foundation

/// The SFU table as one batch of call requests sees it: a snapshot taken when the batch
/// starts. Placing a call over it is a pure decision; the decision leaves as a
/// ``CallMutation/savePlacement(_:)`` in the batch's own transaction and as
/// ``CallOutput/placed`` for the directory to adopt once that transaction committed.
public struct SFUTable: Sendable, CallPlacer {
    /// SFUs with coordinates, by id (those the engine can choose).
    public var nodes: [SFUID: SFUNode]
    /// Whether any SFU is defined at all; without one calls are peer-to-peer.
    public var hasSFUs: Bool
    public var policy: PlacementPolicy
    public var resolver: LocationResolver
    /// The monotonic time the snapshot was taken (heartbeat freshness is judged at it).
    public var now: MonotonicTime
    /// Makes the room and tokens of calls placed on SFUs with rooms (Janus).
    public var roomKeys: SFURoomKeys?

    public init(
        nodes: [SFUID: SFUNode], hasSFUs: Bool, policy: PlacementPolicy, resolver: LocationResolver, now: MonotonicTime,
        roomKeys: SFURoomKeys? = nil
    ) {
        self.roomKeys = roomKeys
        self.nodes = nodes
        self.hasSFUs = hasSFUs
        self.policy = policy
        self.resolver = resolver
        self.now = now
    }

    /// No SFU defined: every call is peer-to-peer.
    public static let none = SFUTable(
        nodes: [:], hasSFUs: false, policy: PlacementPolicy(), resolver: LocationResolver(regions: [:], fallback: GeoPoint(latitude: 0, longitude: 0)!),
        now: MonotonicTime(nanoseconds: 0))

    /// The call's SFU: `current` while that SFU is in the table and not down (sticky), else the
    /// best for these participants. Participants of placements made earlier in the same batch
    /// count as pending load. A new placement is appended to `out`; a refusal is counted there.
    public func place(
        _ cid: CallCID, participants hints: [LocationHint], current: SFUAssignment?, now wallNow: Date, out: inout CallOutput
    ) throws(SwitchboardError) -> SFUAssignment? {
        guard hasSFUs else { return nil }
        let decision = decide(callID: cid.cid, participants: hints, current: current.flatMap { SFUID($0.id) }, earlier: out.placed, at: wallNow)
        switch decision {
        case .kept(let node):
            return SFUAssignment(node, cid: cid.cid, keys: roomKeys)
        case .placed(let record, let node):
            out.mutations.append(.savePlacement(record))
            out.placed.append(record)
            return SFUAssignment(node, cid: cid.cid, keys: roomKeys)
        case .refused(let rejection):
            out.placementRefusals.append(rejection)
            throw SwitchboardError(.noSFUAvailable, "no SFU can take this call")
        }
    }

    /// What ``place(_:participants:current:now:out:)`` decides, for any call id.
    public enum Decision: Sendable, Equatable {
        /// The call stays on its SFU.
        case kept(SFUNode)
        /// A new placement (to be committed).
        case placed(PlacementRecord, SFUNode)
        /// No SFU can take it; the rejection most SFUs shared.
        case refused(PlacementCandidate.Rejection?)
    }

    /// The pure decision: keep `current` while it is in the table and not down, else choose,
    /// counting `earlier` placements (same batch) as pending load.
    public func decide(callID: String, participants hints: [LocationHint], current: SFUID?, earlier: [PlacementRecord], at wallNow: Date) -> Decision {
        if let current, let node = nodes[current], node.state != .down { return .kept(node) }
        var candidates = nodes
        for placement in earlier { candidates[placement.sfu]?.pending += max(1, placement.locations.count) }
        let resolved = hints.map(resolver.resolve)
        let pool = Array(candidates.values)
        guard let chosen = PlacementEngine.choose(participants: resolved, nodes: pool, now: now, policy: policy), let node = nodes[chosen] else {
            return .refused(PlacementEngine.decide(participants: resolved, nodes: pool, now: now, policy: policy).commonRejection)
        }
        let record = PlacementRecord(
            callID: callID, sfu: chosen, locations: hints, sources: resolved.map(\.source), assignedAt: wallNow,
            reason: current == nil ? "placed" : "moved", room: SFUAssignment(node, cid: callID, keys: roomKeys).room?.id)
        return .placed(record, node)
    }
}

extension PlacementDecision {
    /// The rejection most candidates share (`nil` when there were no candidates).
    public var commonRejection: PlacementCandidate.Rejection? {
        let reasons = candidates.compactMap(\.rejection)
        guard !reasons.isEmpty else { return nil }
        return PlacementCandidate.Rejection.allCases.max { a, b in reasons.filter { $0 == a }.count < reasons.filter { $0 == b }.count }
    }
}
