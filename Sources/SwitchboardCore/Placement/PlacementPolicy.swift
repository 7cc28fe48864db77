/// The tunable parts of the placement score (config section `placement`).
public struct PlacementPolicy: Sendable, Equatable {
    /// RTT added to every estimate (ms): last-mile and processing.
    public var baseRTT: Double
    /// Estimated round trip per kilometre of great-circle distance (ms/km). Light in fibre
    /// covers ~200 km per ms one way; paths are longer than great circles, so 0.01 ms/km ≈ 1 ms
    /// of RTT per 100 km.
    public var rttPerKilometer: Double
    /// How strongly load raises the score: score × (1 + loadWeight × utilisation²).
    public var loadWeight: Double
    /// An SFU with no heartbeat for this long is not placed on, and is marked down.
    public var staleAfter: Duration
    /// Seed of the tie-break order between equal scores.
    public var seed: UInt64

    public init(baseRTT: Double = 2, rttPerKilometer: Double = 0.01, loadWeight: Double = 1, staleAfter: Duration = .seconds(15), seed: UInt64 = 0) {
        self.baseRTT = baseRTT
        self.rttPerKilometer = rttPerKilometer
        self.loadWeight = loadWeight
        self.staleAfter = staleAfter
        self.seed = seed
    }

    /// Estimated RTT (ms) for a geographic distance.
    public func estimatedRTT(kilometers: Double) -> Double { baseRTT + kilometers * rttPerKilometer }
}
