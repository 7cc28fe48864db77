// `scripts/bench tunnel`: what a relayed batch costs to write and read on the bus, with the
// tunnel's own JSON against Foundation's coders (the same text; what daemons used before).
//
//   switchboard-tunnel-bench [--runs N] [--iterations N] [--batch N]
//   switchboard-tunnel-bench --once foundation|tunnel [--iterations N] [--batch N]   (for callgrind)
//
// Two batches, each wrapped in a bus message as a daemon sends it and read back as the receiver
// reads it: events (a relaying daemon's call.join frames to the leader) and commands (the
// leader's answers, each ~700 bytes of call state, going back). Per run, each side's time per
// batch round trip; the medians of the runs and their ratio; the last line is JSON.
import Foundation
import SwitchboardCore

struct Failure: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}

var runs = 5, iterations = 2000, size = 20
var once: String?
var rest = CommandLine.arguments.dropFirst()
while let flag = rest.popFirst() {
    guard let value = rest.popFirst() else { fatalError("\(flag) needs a value") }
    switch flag {
    case "--runs": runs = Int(value) ?? 0
    case "--iterations": iterations = Int(value) ?? 0
    case "--batch": size = Int(value) ?? 0
    case "--once": once = value
    default: fatalError("unknown flag \(flag)")
    }
}
guard runs > 0, iterations > 0, size > 0, once == nil || once == "foundation" || once == "tunnel" else {
    fatalError("usage: switchboard-tunnel-bench [--runs N] [--iterations N] [--batch N] [--once foundation|tunnel]")
}

let join = #"{"id":17,"type":"call.join","data":{"type":"default","id":"room-4711","create":true,"location":{"latitude":52.52,"longitude":13.405}}}"#
let answer = #"{"id":17,"type":"response","data":{"call":{"cid":"default:room-4711","type":"default","id":"room-4711","created_by":"user-0042","created_at":"2026-11-28T03:04:05.678Z","session":1,"custom":{},"members":[{"user_id":"user-0042","ring_state":"none"}],"participants":[{"session_id":"5f0c8a7e-8f6b-4a51-9d0e-1c2b3a4d5e6f","user_id":"user-0042","role":"initiator","joined_at":"2026-11-28T03:04:05.678Z","media":{"audio":true,"video":false,"screenshare":false,"speaking":false,"audio_level":0,"pinned":false}}],"sfu":null,"ended_at":null},"session_id":"5f0c8a7e-8f6b-4a51-9d0e-1c2b3a4d5e6f","sfu":null}}"#
let events = TunnelBatch(
    generation: 3, events: (0..<size).map { .message(ConnectionID(thread: 255, serial: UInt64($0)), Array(join.utf8), isBinary: false) }, reports: true)
let commands = TunnelBatch(
    generation: 3, commands: (0..<size).map { .send(ConnectionID(thread: 255, serial: UInt64($0)), Array(answer.utf8)) }, reports: true,
    handled: Dictionary(uniqueKeysWithValues: (0..<size).map { (ConnectionID(thread: 255, serial: UInt64($0)), 1) }))

/// Writes `batch` as a bus message and reads it back, as sender and receiver do.
func foundation(_ batch: TunnelBatch) throws -> TunnelBatch {
    let body = String(decoding: try JSONEncoder().encode(batch), as: UTF8.self)
    let wire = try JSONEncoder().encode(NodeMessage(id: "m1", from: "node-a", kind: TunnelBatch.eventsKind, body: body))
    let message = try JSONDecoder().decode(NodeMessage.self, from: wire)
    return try JSONDecoder().decode(TunnelBatch.self, from: Data(message.body.utf8))
}

func tunnel(_ batch: TunnelBatch) throws -> TunnelBatch {
    let wire = NodeMessage(id: "m1", from: "node-a", kind: TunnelBatch.eventsKind, body: batch.encoded()).json()
    guard let message = NodeMessage.read(wire) else { throw Failure("no message") }
    return try TunnelBatch.decode(message.body)
}

let sides: [(name: String, run: (TunnelBatch) throws -> TunnelBatch)] = [("foundation", foundation), ("tunnel", tunnel)]
for side in sides {
    for batch in [events, commands] where try side.run(batch) != batch { throw Failure("\(side.name) does not read back what it wrote") }
}

if let once {
    let run = once == "foundation" ? foundation : tunnel
    for _ in 0..<iterations { _ = try run(events); _ = try run(commands) }
    exit(0)
}

/// Microseconds per round trip of `batch` on `side`, over `iterations`.
func measure(_ run: (TunnelBatch) throws -> TunnelBatch, _ batch: TunnelBatch, iterations: Int) throws -> Double {
    let clock = ContinuousClock()
    let took = try clock.measure { for _ in 0..<iterations { _ = try run(batch) } }
    return Double(took.components.seconds) * 1e6 / Double(iterations) + Double(took.components.attoseconds) / 1e12 / Double(iterations)
}

func median(_ values: [Double]) -> Double { values.sorted()[values.count / 2] }

var results: [String: [String: Double]] = [:]
print("batch of \(size): microseconds per round trip (write, wrap in a bus message, read), medians of \(runs) runs of \(iterations)")
for (label, batch) in [("events", events), ("commands", commands)] {
    var times: [String: [Double]] = [:]
    for _ in 0..<runs {
        // Alternating, so both sides see the same machine.
        for side in sides { times[side.name, default: []].append(try measure(side.run, batch, iterations: iterations)) }
    }
    let f = median(times["foundation"]!), t = median(times["tunnel"]!)
    results[label] = ["foundation_us": f, "tunnel_us": t, "ratio": t / f]
    print(String(format: "%@: Foundation %.1f µs, tunnel JSON %.1f µs (%.2f×); per run %@ / %@", label, f, t, t / f,
        times["foundation"]!.map { String(format: "%.1f", $0) }.joined(separator: " "), times["tunnel"]!.map { String(format: "%.1f", $0) }.joined(separator: " ")))
}
let json = try JSONSerialization.data(withJSONObject: ["batch": size, "runs": runs, "iterations": iterations, "results": results], options: [.sortedKeys])
print(String(decoding: json, as: UTF8.self))
