/// One row of the location table: an SFU, where it is, how full and how healthy.
public struct SFUNode: Sendable, Equatable {
    /// Whether an SFU takes calls.
    public enum State: String, Sendable, Equatable, Codable, CaseIterable {
        /// Takes new calls.
        case active
        /// Keeps its calls, takes no new ones.
        case draining
        /// Out of service; its calls are moved elsewhere.
        case down
    }

    public var id: SFUID
    /// Where clients connect (ws:// or wss://).
    public var url: String
    /// Region code from the region table, if it was given as one.
    public var region: String?
    public var location: GeoPoint
    /// Participants it can carry.
    public var capacity: Int
    /// Operator preference: scores are divided by the weight (2.0 = preferred).
    public var weight: Double
    public var state: State
    /// When the last heartbeat arrived (monotonic); `nil` before the first.
    public var lastHeartbeat: MonotonicTime?
    /// Participants the SFU reported in its last heartbeat.
    public var reportedLoad: Int
    /// Participants assigned since the last report: counted at once, so a burst cannot overfill it.
    public var pending: Int
    public var kind: SFUKind

    public init(
        id: SFUID, url: String, region: String? = nil, location: GeoPoint, capacity: Int, weight: Double = 1,
        state: State = .active, lastHeartbeat: MonotonicTime? = nil, reportedLoad: Int = 0, pending: Int = 0,
        kind: SFUKind = .heartbeat
    ) {
        self.kind = kind
        self.id = id
        self.url = url
        self.region = region
        self.location = location
        self.capacity = capacity
        self.weight = weight
        self.state = state
        self.lastHeartbeat = lastHeartbeat
        self.reportedLoad = reportedLoad
        self.pending = pending
    }

    /// Load the placement counts: reported plus pending.
    public var effectiveLoad: Int { reportedLoad.addingSaturating(pending) }
}

extension Int {
    /// `self + other`, clamped to `Int.max` / `Int.min` instead of trapping.
    func addingSaturating(_ other: Int) -> Int {
        let (sum, overflow) = addingReportingOverflow(other)
        return overflow ? (other > 0 ? .max : .min) : sum
    }
}
