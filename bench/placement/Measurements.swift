import Foundation
import SwitchboardCore

/// Mean and nearest-rank percentiles of a sample.
struct Summary {
    let count: Int
    let mean: Double
    let p50: Double
    let p99: Double
    let max: Double

    init(_ values: [Double]) {
        let sorted = values.sorted()
        count = sorted.count
        mean = sorted.isEmpty ? 0 : sorted.reduce(0, +) / Double(sorted.count)
        p50 = Self.percentile(sorted, 0.50)
        p99 = Self.percentile(sorted, 0.99)
        max = sorted.last ?? 0
    }

    static func percentile(_ sorted: [Double], _ fraction: Double) -> Double {
        guard !sorted.isEmpty else { return 0 }
        let rank = Int((fraction * Double(sorted.count)).rounded(.up))
        return sorted[Swift.max(0, Swift.min(sorted.count - 1, rank - 1))]
    }
}

// MARK: (1) single clients

struct SingleResult {
    let label: String
    let clients: Int
    let extraKm: Summary
    /// Clients not placed on their nearest healthy SFU.
    let offNearest: Int
    let unplaced: Int
}

/// Extra km versus the nearest healthy SFU with room, for single clients whose coordinates are known.
func singleClients(world: SFUWorld, clients: [GeoPoint], label: String) -> SingleResult {
    var extra: [Double] = []
    var offNearest = 0
    var unplaced = 0
    for client in clients {
        let participant = [located(client)]
        guard let chosen = world.decide(participant).chosen else {
            unplaced += 1
            continue
        }
        let chosenKm = client.distanceKilometers(to: world.node(chosen).location)
        let nearestKm = world.nodes.filter { world.healthy($0) }.map { client.distanceKilometers(to: $0.location) }.min()!
        extra.append(chosenKm - nearestKm)
        if chosenKm > nearestKm { offNearest += 1 }
    }
    return SingleResult(label: label, clients: clients.count, extraKm: Summary(extra), offNearest: offNearest, unplaced: unplaced)
}

// MARK: (2) minimax versus first joiner

struct CallResult {
    let size: Int
    let calls: Int
    let firstJoiner: Summary
    let minimax: Summary
    /// Calls whose worst participant is nearer with minimax.
    let improved: Int
}

/// Participants of one call: the first by population; each other from the same metro with
/// probability ½, else anywhere by population.
func callParticipants(size: Int, sampler: ClientSampler, _ random: inout SplitMix64) -> [GeoPoint] {
    let home = sampler.metro(&random)
    return (0..<size).map { index in
        index > 0 && random.unit() >= 0.5 ? sampler.point(&random) : sampler.point(near: home, &random)
    }
}

func worstKm(_ points: [GeoPoint], _ node: SFUNode) -> Double {
    points.map { $0.distanceKilometers(to: node.location) }.max()!
}

func minimaxVersusFirstJoiner(world: SFUWorld, calls: [[GeoPoint]]) -> CallResult {
    var first: [Double] = []
    var minimax: [Double] = []
    var improved = 0
    for call in calls {
        let participants = call.map(located)
        guard let both = world.decide(participants).chosen, let firstChoice = world.decide([participants[0]]).chosen else { continue }
        let m = worstKm(call, world.node(both))
        let f = worstKm(call, world.node(firstChoice))
        minimax.append(m)
        first.append(f)
        if m < f - 1e-9 { improved += 1 }
    }
    return CallResult(size: calls.first?.count ?? 0, calls: minimax.count, firstJoiner: Summary(first), minimax: Summary(minimax), improved: improved)
}

// MARK: (3) burst

struct BurstResult {
    let label: String
    let calls: Int
    let participants: Int
    let healthyCapacity: Int
    let maxUtilization: Double
    let unplacedCalls: Int
    let placedParticipants: Int
}

/// Places `calls` one after another on an idle table. With `countPending`, each call's
/// participants are added to its SFU's `pending` at once (what the daemon does); without,
/// the engine sees only the last reported load (zero) for the whole burst.
func burst(world start: SFUWorld, calls: [[GeoPoint]], countPending: Bool, label: String) -> BurstResult {
    var world = start
    var actual = [SFUID: Int]()
    var unplaced = 0
    var placed = 0
    for call in calls {
        guard let chosen = world.decide(call.map(located)).chosen else {
            unplaced += 1
            continue
        }
        actual[chosen, default: 0] += call.count
        placed += call.count
        if countPending, let index = world.nodes.firstIndex(where: { $0.id == chosen }) {
            world.nodes[index].pending += call.count
        }
    }
    let healthyCapacity = start.nodes.filter { start.healthy($0) }.reduce(0) { $0 + $1.capacity }
    let maxUtilization = start.nodes.map { Double($0.effectiveLoad + actual[$0.id, default: 0]) / Double(max(1, $0.capacity)) }.max() ?? 0
    return BurstResult(
        label: label, calls: calls.count, participants: calls.reduce(0) { $0 + $1.count }, healthyCapacity: healthyCapacity,
        maxUtilization: maxUtilization, unplacedCalls: unplaced, placedParticipants: placed)
}

// MARK: (4) selection cost

struct CostResult {
    let sfus: Int
    /// Median ns per call, by participants per call.
    let nanoseconds: [Int: Double]
    let runs: Int
    let callsPerRun: [Int: Int]
}

/// A table of `count` healthy, idle SFUs placed around population centres.
func costWorld(count: Int, sampler: ClientSampler, _ random: inout SplitMix64) -> [SFUNode] {
    let now = MonotonicTime(nanoseconds: 3_600 * 1_000_000_000)
    return (0..<count).map { index in
        SFUNode(
            id: SFUID("sfu-\(index)")!, url: "wss://sfu-\(index).example", location: sampler.point(&random), capacity: 1000,
            lastHeartbeat: now)
    }
}

func selectionCost(sfus: Int, sizes: [Int], runs: Int, budget: Int, sampler: ClientSampler, _ random: inout SplitMix64) -> (CostResult, UInt64) {
    let nodes = costWorld(count: sfus, sampler: sampler, &random)
    let now = MonotonicTime(nanoseconds: 3_600 * 1_000_000_000)
    let policy = PlacementPolicy(staleAfter: SFUWorld.staleAfter, seed: 1)
    let clock = ContinuousClock()
    var sink: UInt64 = 0
    var medians: [Int: Double] = [:]
    var callsPerRun: [Int: Int] = [:]
    for size in sizes {
        let pool = (0..<64).map { _ in (0..<size).map { _ in located(sampler.point(&random)) } }
        // Enough calls per run that a run takes well over the clock's resolution.
        let calls = max(8, budget / (sfus * size))
        callsPerRun[size] = calls
        var perCall: [Double] = []
        for run in 0...runs {
            let elapsed = clock.measure {
                for call in 0..<calls {
                    let chosen = PlacementEngine.choose(participants: pool[call & 63], nodes: nodes, now: now, policy: policy)
                    sink &+= UInt64(chosen?.rawValue.utf8.count ?? 0)
                }
            }
            // Run 0 is a warm-up.
            if run > 0 { perCall.append(nanoseconds(elapsed) / Double(calls)) }
        }
        medians[size] = Summary(perCall).p50
    }
    return (CostResult(sfus: sfus, nanoseconds: medians, runs: runs, callsPerRun: callsPerRun), sink)
}

func nanoseconds(_ duration: Duration) -> Double {
    Double(duration.components.seconds) * 1e9 + Double(duration.components.attoseconds) / 1e9
}
