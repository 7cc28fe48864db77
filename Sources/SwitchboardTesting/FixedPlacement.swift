import Foundation
import SwitchboardCore

/// A placement source that answers one fixed SFU (or none: peer-to-peer) and keeps nothing;
/// `current` answers `placed` (the placements the store would hold, made by other nodes).
public struct FixedPlacement: PlacementSource, CallPlacer {
    public let sfu: SFUAssignment?
    public let placed: [CallCID: SFUAssignment]

    public init(sfu: SFUAssignment? = nil, placed: [CallCID: SFUAssignment] = [:]) {
        self.sfu = sfu
        self.placed = placed
    }

    public func placer() -> any CallPlacer { self }
    public func current(_ cid: CallCID) -> SFUAssignment? { placed[cid] }
    public func committed(placed: [PlacementRecord], released: [CallCID], refusals: [PlacementCandidate.Rejection?]) {}

    public func place(
        _ cid: CallCID, participants: [LocationHint], current: SFUAssignment?, now: Date, out: inout CallOutput
    ) throws(SwitchboardError) -> SFUAssignment? { sfu }
}
