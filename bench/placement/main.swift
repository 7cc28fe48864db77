// switchboard-placement-bench: the placement engine on a generated, seeded world.
//
//   switchboard-placement-bench [--seed S] [--clients N] [--quick]
//
// Prints a markdown report, then one JSON line. `scripts/bench placement` builds and runs it.
import Foundation
import SwitchboardCore

struct Options {
    var seed: UInt64 = 1
    var clients: Int?
    var quick = false

    /// Single clients in (1), and calls of each size in (2).
    var clientCount: Int { clients ?? (quick ? 2_000 : 10_000) }
    /// Timed runs per cell in (4), after one warm-up run.
    var costRuns: Int { quick ? 5 : 11 }
    /// SFU × participant evaluations per timed run in (4).
    var costBudget: Int { quick ? 200_000 : 1_000_000 }

    static let usage = "usage: switchboard-placement-bench [--seed S] [--clients N] [--quick]"

    static func parse(_ arguments: [String]) -> Options {
        var options = Options()
        var rest = arguments[...]
        func fail(_ message: String) -> Never {
            FileHandle.standardError.write(Data("switchboard-placement-bench: \(message)\n\(usage)\n".utf8))
            exit(2)
        }
        while let argument = rest.popFirst() {
            switch argument {
            case "--seed":
                guard let value = rest.popFirst(), let seed = UInt64(value) else { fail("--seed needs an unsigned integer") }
                options.seed = seed
            case "--clients":
                guard let value = rest.popFirst(), let count = Int(value), count >= 10 else { fail("--clients needs an integer ≥ 10") }
                options.clients = count
            case "--quick":
                options.quick = true
            case "-h", "--help":
                print(usage)
                exit(0)
            default:
                fail("unknown argument \(argument)")
            }
        }
        return options
    }
}

func format(_ value: Double, _ digits: Int = 1) -> String { String(format: "%.\(digits)f", value) }
func grouped(_ value: Int) -> String {
    let digits = String(value)
    var out = ""
    for (index, character) in digits.enumerated() {
        if index > 0, (digits.count - index) % 3 == 0 { out.append(",") }
        out.append(character)
    }
    return out
}
func ratio(_ a: Double, _ b: Double) -> Double { b > 0 ? a / b : 1 }
func json(_ value: Double) -> String { value.isFinite ? String(format: "%.4g", value) : "null" }

let options = Options.parse(Array(CommandLine.arguments.dropFirst()))
var random = SplitMix64(seed: options.seed)
let sampler = ClientSampler()
let world = SFUWorld(&random)
let healthyNodes = world.nodes.filter { world.healthy($0) }
let healthyCapacity = healthyNodes.reduce(0) { $0 + $1.capacity }
let started = ContinuousClock.now

// (1) Single clients with known coordinates.
let singles = (0..<options.clientCount).map { _ in sampler.point(&random) }
let idleSingles = singleClients(world: world, clients: singles, label: "idle SFUs")
var loadedWorld = world
for index in loadedWorld.nodes.indices {
    loadedWorld.nodes[index].reportedLoad = Int(Double(loadedWorld.nodes[index].capacity) * 0.8 * random.unit())
}
let loadedSingles = singleClients(world: loadedWorld, clients: singles, label: "SFUs 0–80 % loaded (informational)")

// (2) Minimax versus first joiner, on idle SFUs (equal load).
let callResults = [2, 4].map { size in
    let calls = (0..<options.clientCount).map { _ in callParticipants(size: size, sampler: sampler, &random) }
    return minimaxVersusFirstJoiner(world: world, calls: calls)
}

// (3) A burst: N calls of 2–4 participants, N = healthy capacity ≥ 2 × capacity / call size.
let burstCalls = (0..<healthyCapacity).map { _ in callParticipants(size: random.int(2...4), sampler: sampler, &random) }
let bursts = [
    burst(world: world, calls: burstCalls, countPending: true, label: "pending counted (Switchboard)"),
    burst(world: world, calls: burstCalls, countPending: false, label: "reported load only (control)"),
]

// (4) Selection cost.
let costSizes = [1, 2, 4]
var sink: UInt64 = 0
let costs = [10, 100, 10_000].map { count in
    let (result, checksum) = selectionCost(
        sfus: count, sizes: costSizes, runs: options.costRuns, budget: options.costBudget, sampler: sampler, &random)
    sink &+= checksum
    return result
}
let wall = ContinuousClock.now - started

// --- report ---------------------------------------------------------------------------------

let unhealthy = world.nodes.filter { !world.healthy($0) }
    .map { node in "\(node.id) \(node.state == .active ? "stale" : node.state.rawValue)" }
print("## Placement benchmark")
print()
print(
    "Seed \(options.seed)\(options.quick ? " (quick)" : ""): \(world.nodes.count) SFUs at \(sites.count) cloud sites, "
        + "capacities 200/500/1,000, weight 1; unhealthy: \(unhealthy.joined(separator: ", ")); healthy capacity "
        + "\(grouped(healthyCapacity)) participants. Clients drawn around \(metros.count) metros by population "
        + "(exponential offset, mean 120 km). Policy: base RTT \(format(world.policy.baseRTT)) ms, "
        + "\(world.policy.rttPerKilometer) ms/km, load weight \(format(world.policy.loadWeight)), stale after 15 s.")
print()
print("**(1) Single clients with known coordinates: km beyond the nearest healthy SFU** (target 0 on idle SFUs)")
print()
print("| SFU table | clients | mean extra km | p99 extra km | max extra km | not on nearest | no SFU | target |")
print("|---|---|---|---|---|---|---|---|")
for (index, result) in [idleSingles, loadedSingles].enumerated() {
    let target = index == 0 ? (result.extraKm.max == 0 && result.unplaced == 0 ? "0: met" : "0: MISSED") : "n/a (load trades distance)"
    print(
        "| \(result.label) | \(grouped(result.clients)) | \(format(result.extraKm.mean, 2)) | \(format(result.extraKm.p99, 2)) | "
            + "\(format(result.extraKm.max, 1)) | \(grouped(result.offNearest)) | \(result.unplaced) | \(target) |")
}
print()
print(
    "**(2) Worst participant's km to the call's SFU: minimax versus first joiner** (idle SFUs; first participant "
        + "by population, each other from the same metro with p = ½, else anywhere)")
print()
print("| call size | calls | first-joiner mean km | minimax mean km | ratio | first-joiner p99 km | minimax p99 km | ratio | calls improved |")
print("|---|---|---|---|---|---|---|---|---|")
for result in callResults {
    print(
        "| \(result.size) | \(grouped(result.calls)) | \(grouped(Int(result.firstJoiner.mean.rounded()))) | "
            + "\(grouped(Int(result.minimax.mean.rounded()))) | \(format(ratio(result.minimax.mean, result.firstJoiner.mean), 3)) | "
            + "\(grouped(Int(result.firstJoiner.p99.rounded()))) | \(grouped(Int(result.minimax.p99.rounded()))) | "
            + "\(format(ratio(result.minimax.p99, result.firstJoiner.p99), 3)) | "
            + "\(format(100 * Double(result.improved) / Double(max(1, result.calls)))) % |")
}
print()
print(
    "**(3) Burst: \(grouped(burstCalls.count)) calls of 2–4 participants placed one after another on idle SFUs** "
        + "(N = healthy capacity ≥ 2 × capacity / call size; target max load/capacity ≤ 1.0)")
print()
print("| placement | calls | participants asked | healthy capacity | participants placed | max load/capacity | calls with no SFU | target |")
print("|---|---|---|---|---|---|---|---|")
for result in bursts {
    let target = result.maxUtilization <= 1.0 ? "≤ 1.0: met" : "≤ 1.0: MISSED"
    print(
        "| \(result.label) | \(grouped(result.calls)) | \(grouped(result.participants)) | \(grouped(result.healthyCapacity)) | "
            + "\(grouped(result.placedParticipants)) | \(format(result.maxUtilization, 3)) | \(grouped(result.unplacedCalls)) | \(target) |")
}
print()
print(
    "**(4) Selection cost per call** (`PlacementEngine.choose`, the one-pass path placing uses; median of "
        + "\(options.costRuns) runs after a warm-up, ContinuousClock; healthy idle SFUs around the metros)")
print()
print("| SFUs | " + costSizes.map { "\($0) participant\($0 == 1 ? "" : "s") ns/call" }.joined(separator: " | ") + " | calls per run |")
print("|---|" + costSizes.map { _ in "---|" }.joined() + "---|")
for cost in costs {
    let cells = costSizes.map { grouped(Int(cost.nanoseconds[$0]!.rounded())) }
    let callsCell = costSizes.map { grouped(cost.callsPerRun[$0]!) }.joined(separator: " / ")
    print("| \(grouped(cost.sfus)) | " + cells.joined(separator: " | ") + " | \(callsCell) |")
}
print()
print(
    "Not measured here: the time from an SFU's death to all its calls reassigned needs a daemon and heartbeats over "
        + "real HTTP; `scripts/bench placement` measures it after this report, in (5) (bench/load/failover_timing.py).")
print()
print("Wall time \(format(Double(wall.components.seconds) + Double(wall.components.attoseconds) / 1e18, 1)) s; checksum \(sink % 1000).")
print()

func summaryJSON(_ summary: Summary) -> String {
    "{\"mean\":\(json(summary.mean)),\"p50\":\(json(summary.p50)),\"p99\":\(json(summary.p99)),\"max\":\(json(summary.max))}"
}
var fields: [String] = [
    "\"bench\":\"placement\"", "\"seed\":\(options.seed)", "\"quick\":\(options.quick)", "\"clients\":\(options.clientCount)",
    "\"sfus\":\(world.nodes.count)", "\"healthy_capacity\":\(healthyCapacity)",
]
fields.append(
    "\"single\":{" + [idleSingles, loadedSingles].enumerated().map { index, result in
        "\"\(index == 0 ? "idle" : "loaded")\":{\"clients\":\(result.clients),\"extra_km\":\(summaryJSON(result.extraKm)),"
            + "\"not_nearest\":\(result.offNearest),\"unplaced\":\(result.unplaced)}"
    }.joined(separator: ",") + "}")
fields.append(
    "\"calls\":{" + callResults.map { result in
        "\"\(result.size)\":{\"calls\":\(result.calls),\"first_joiner_km\":\(summaryJSON(result.firstJoiner)),"
            + "\"minimax_km\":\(summaryJSON(result.minimax)),\"mean_ratio\":\(json(ratio(result.minimax.mean, result.firstJoiner.mean))),"
            + "\"p99_ratio\":\(json(ratio(result.minimax.p99, result.firstJoiner.p99))),\"improved\":\(result.improved)}"
    }.joined(separator: ",") + "}")
fields.append(
    "\"burst\":{" + zip(["pending", "reported_only"], bursts).map { key, result in
        "\"\(key)\":{\"calls\":\(result.calls),\"participants\":\(result.participants),\"placed\":\(result.placedParticipants),"
            + "\"max_utilization\":\(json(result.maxUtilization)),\"unplaced_calls\":\(result.unplacedCalls)}"
    }.joined(separator: ",") + "}")
fields.append(
    "\"cost_ns\":{" + costs.map { cost in
        "\"\(cost.sfus)\":{" + costSizes.map { "\"p\($0)\":\(json(cost.nanoseconds[$0]!))" }.joined(separator: ",") + "}"
    }.joined(separator: ",") + "}")
print("{" + fields.joined(separator: ",") + "}")
