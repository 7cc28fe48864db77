import SwitchboardCore

extension SFUDirectory {
    /// How participants reach `sfu`; `nil` when it is not in the table.
    public func assignment(of sfu: SFUID) -> SFUAssignment? {
        queue.sync { records[sfu].map { SFUAssignment(id: $0.id.rawValue, kind: $0.kind, url: $0.url, region: $0.region) } }
    }

    /// Whether the location table has no SFU at all (calls are then peer-to-peer).
    public var isEmpty: Bool { queue.sync { records.isEmpty } }
}

/// The call hub's placement source: a snapshot of the table per batch, the durable placement
/// at restart, and adoption of what each batch committed.
extension SFUDirectory: PlacementSource {
    public func placer() -> any CallPlacer { table() }

    /// The call's SFU as its participants see it (with its room on kinds that have rooms).
    /// Every call's placement, in call id order.
    public func allPlacements() -> [PlacementRecord] {
        queue.sync { placements.values.sorted { $0.callID < $1.callID } }
    }

    public func current(_ cid: CallCID) -> SFUAssignment? {
        queue.sync { placements[cid.cid].flatMap { nodes[$0.sfu] }.map { SFUAssignment($0, cid: cid.cid, keys: roomKeys) } }
    }

    public func committed(placed: [PlacementRecord], released: [CallCID], refusals: [PlacementCandidate.Rejection?]) {
        adopt(placed: placed, released: released, refusals: refusals)
    }
}
