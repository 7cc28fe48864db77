import Foundation

extension PlacementRecord {
    /// The `reason` of a placement that an SFU failover made.
    public static let failoverReason = "failover"

    /// Whether the call was told of this placement. A failover commits the move in its own
    /// transaction and the call's `call.sfu_changed` (with its `sfu.call_moved` webhook) in a
    /// later call batch; a daemon that stops in between leaves a move nobody heard of. True
    /// unless a failover made this placement and `lastChange`, the call's last
    /// `call.sfu_changed`, is older than the move or names another SFU.
    public func isAnnounced(lastChange: CallEventRecord?) -> Bool {
        guard reason == Self.failoverReason else { return true }
        guard let lastChange, lastChange.payload["sfu"]?["id"] == .string(sfu.rawValue) else { return false }
        // Both times are kept to the millisecond; the change is logged after the move.
        return lastChange.at >= assignedAt.addingTimeInterval(-0.001)
    }
}
