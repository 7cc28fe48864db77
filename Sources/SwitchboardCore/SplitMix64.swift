/// SplitMix64 (Steele, Lea, Flood 2014): a small seeded generator. The core draws no
/// randomness of its own; callers that need reproducible randomness (property tests, the
/// benchmarks' generated worlds) pass one of these in.
public struct SplitMix64: RandomNumberGenerator, Sendable {
    private var state: UInt64

    public init(seed: UInt64) { state = seed }

    public mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }

    /// A uniform double in [0, 1).
    public mutating func unit() -> Double { Double(next() >> 11) * 0x1.0p-53 }

    /// `true` with `probability`.
    public mutating func chance(_ probability: Double) -> Bool { unit() < probability }
}
