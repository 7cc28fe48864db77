import Foundation
import SwitchboardCore

/// A placement source that answers one fixed SFU (or none: peer-to-peer) and keeps nothing.
public struct FixedPlacement: PlacementSource, CallPlacer {
    public let sfu: SFUAssignment?

    public init(sfu: SFUAssignment? = nil) {
        self.sfu = sfu
    }

    public func placer() -> any CallPlacer { self }
    public func current(_ cid: CallCID) -> SFUAssignment? { nil }
    public func committed(placed: [PlacementRecord], released: [CallCID], refusals: [PlacementCandidate.Rejection?]) {}

    public func place(
        _ cid: CallCID, participants: [LocationHint], current: SFUAssignment?, now: Date, out: inout CallOutput
    ) throws(SwitchboardError) -> SFUAssignment? { sfu }
}
