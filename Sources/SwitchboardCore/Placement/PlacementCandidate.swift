/// One SFU as placement saw it: the filters it failed, its estimated RTTs and its score.
public struct PlacementCandidate: Sendable, Equatable {
    /// Why an SFU was not eligible.
    public enum Rejection: String, Sendable, Equatable, CaseIterable {
        case draining, down
        /// No heartbeat yet, or none within `stale_after`.
        case stale
        /// Reported load + pending + the call's participants would exceed capacity.
        case full
    }

    public let sfu: SFUID
    public let url: String
    public let region: String?
    /// Largest great-circle distance from any participant (km).
    public let worstDistanceKilometers: Double
    /// Largest estimated (or measured) RTT of any participant (ms).
    public let worstRTT: Double
    /// Reported load plus pending assignments.
    public let load: Int
    public let capacity: Int
    /// (load + the call's participants) / capacity.
    public let utilization: Double
    /// `nil` when eligible.
    public let rejection: Rejection?
    /// Lower is better; `nil` when rejected.
    public let score: Double?
}

/// The outcome of placing one call.
public struct PlacementDecision: Sendable, Equatable {
    /// The SFU chosen, or `nil` when none was eligible.
    public let chosen: SFUID?
    /// Every SFU: eligible ones best first, then rejected ones by id.
    public let candidates: [PlacementCandidate]
}
