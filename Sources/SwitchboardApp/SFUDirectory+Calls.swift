import SwitchboardCore

extension SFUDirectory {
    /// How participants reach `sfu`; `nil` when it is not in the table.
    public func assignment(of sfu: SFUID) -> SFUAssignment? {
        queue.sync { records[sfu].map { SFUAssignment(id: $0.id.rawValue, url: $0.url, region: $0.region) } }
    }

    /// Whether the location table has no SFU at all (calls are then peer-to-peer).
    public var isEmpty: Bool { queue.sync { records.isEmpty } }
}

/// The call engine's placement port over the ``SFUDirectory``: sticky per call, `nil` when no
/// SFU is registered, `no_sfu_available` when none can take the call.
public struct DirectoryPlacer: CallPlacer {
    public let directory: SFUDirectory

    public init(directory: SFUDirectory) {
        self.directory = directory
    }

    public func place(_ cid: CallCID, participants: [LocationHint]) throws(SwitchboardError) -> SFUAssignment? {
        guard !directory.isEmpty else { return nil }
        let record = try directory.place(callID: cid.cid, participants: participants)
        guard let sfu = directory.assignment(of: record.sfu) else {
            throw SwitchboardError(.noSFUAvailable, "the SFU chosen for \(cid) left the table")
        }
        return sfu
    }

    public func current(_ cid: CallCID) -> SFUAssignment? {
        directory.placement(of: cid.cid).flatMap { directory.assignment(of: $0.sfu) }
    }
}
