// `scripts/bench client`: SwitchboardKit's cost per event (decode + state update) in a call of
// 50 participants, against decoding alone (the baseline, same frames, same run), and the memory
// one call's state of 50 participants holds. Medians of --runs runs; no server, no socket.
import Foundation
import SwitchboardKit

#if canImport(Glibc)
import CSwitchboardShims
#endif

let arguments = CommandLine.arguments
func option(_ name: String, _ fallback: Int) -> Int {
    guard let index = arguments.firstIndex(of: name), index + 1 < arguments.count, let value = Int(arguments[index + 1]) else { return fallback }
    return value
}
let runs = option("--runs", 5)
let eventCount = option("--events", 20000)
let participants = option("--participants", 50)
let calls = option("--calls", 1000)

func participant(_ index: Int, audio: Bool = false, video: Bool = false, speaking: Bool = false, level: Double = 0) -> String {
    #"{"audio":\#(audio),"audio_level":\#(level),"dominant_speaker":false,"joined_at":\#(1_795_317_000_000 + index),"pinned":false,"role":"participant","screenshare":false,"session_id":"s\#(String(format: "%04d", index))-6c5b-4f8d-9a01-2d7b4e8c5f39","speaking":\#(speaking),"user_id":"user\#(index)","video":\#(video)}"#
}

let callJSON = #"{"cid":"default:bench","created_at":1795317000000,"created_by":"user0","custom":{},"dominant_speaker":null,"ended_at":null,"ended_reason":null,"id":"bench","ringing":false,"session":1,"sfu":null,"type":"default"}"#
let joinText = #"{"data":{"call":\#(callJSON),"members":[],"participants":[\#((0..<participants).map { participant($0) }.joined(separator: ","))],"role":"participant","session_id":"s0000-6c5b-4f8d-9a01-2d7b4e8c5f39","sfu":null},"id":1,"type":"response"}"#

/// The event mix of a busy call: media toggles, speaking levels, dominant-speaker changes,
/// and a participant leaving and joining again.
func events() -> [String] {
    var texts: [String] = []
    var random = SystemRandomNumberGenerator()
    for seq in 1...eventCount {
        let who = Int.random(in: 0..<participants, using: &random)
        let session = "s\(String(format: "%04d", who))-6c5b-4f8d-9a01-2d7b4e8c5f39"
        let kind = seq % 10
        let data: String
        let type: String
        switch kind {
        case 0:
            type = "call.dominant_speaker_changed"
            data = #"{"call_cid":"default:bench","session_id":"\#(session)","user_id":"user\#(who)"}"#
        case 1:
            type = "call.participant_left"
            data = #"{"call_cid":"default:bench","participant":{"reason":"left","session_id":"\#(session)","user_id":"user\#(who)"}}"#
        case 2:
            type = "call.participant_joined"
            data = #"{"call_cid":"default:bench","participant":\#(participant(who))}"#
        default:
            type = "call.participant_updated"
            data = #"{"call_cid":"default:bench","participant":\#(participant(who, audio: kind % 2 == 0, video: kind % 3 == 0, speaking: kind > 6, level: Double(kind) / 10))}"#
        }
        texts.append(#"{"call_cid":"default:bench","data":\#(data),"seq":\#(seq),"type":"\#(type)"}"#)
    }
    return texts
}

func joined() throws -> CallModel {
    guard case .response(_, let data) = try ServerFrame.parse(joinText) else { fatalError("no join answer") }
    var model = CallModel(callID: CallID(type: "default", id: "bench"))
    let encoded = try JSONEncoder().encode(data)
    model.applyJoin(try JSONDecoder().decode(JoinResult.self, from: encoded))
    return model
}

func nanoseconds(_ body: () throws -> Void) rethrows -> Double {
    let start = ContinuousClock.now
    try body()
    let elapsed = ContinuousClock.now - start
    return Double(elapsed.components.seconds) * 1e9 + Double(elapsed.components.attoseconds) / 1e9
}

func median(_ values: [Double]) -> Double {
    let sorted = values.sorted()
    return sorted.count % 2 == 1 ? sorted[sorted.count / 2] : (sorted[sorted.count / 2 - 1] + sorted[sorted.count / 2]) / 2
}

let texts = events()
var decodeOnly: [Double] = []
var decodeAndApply: [Double] = []
var checksum = 0
for _ in 0..<runs {
    // Baseline: the same frames decoded (JSON to a value), nothing applied.
    decodeOnly.append(
        try nanoseconds {
            for text in texts {
                if case .event(let event) = try ServerFrame.parse(text) { checksum &+= Int(event.seq & 1) }
            }
        } / Double(texts.count))
    var model = try joined()
    decodeAndApply.append(
        try nanoseconds {
            for text in texts {
                if case .event(let event) = try ServerFrame.parse(text) { model.apply(event, me: "user0") }
            }
        } / Double(texts.count))
    checksum &+= model.participants.count
}

/// Bytes the heap holds for `calls` call states of `participants` participants each.
func bytesPerCall() throws -> Double? {
    #if canImport(Glibc)
    let template = try joined()
    let before = sb_heap_in_use()
    var kept: [CallModel] = []
    kept.reserveCapacity(calls)
    for index in 0..<calls {
        var copy = template
        // A change gives each copy storage of its own, as calls of their own would have.
        copy.apply(ServerEvent(type: "call.custom", seq: Int64(index), callCID: "default:bench", data: ["n": .number(Double(index))]), me: "user0")
        copy.applyLeft([])
        kept.append(copy)
    }
    let after = sb_heap_in_use()
    precondition(kept.count == calls)
    return (Double(after) - Double(before)) / Double(calls)
    #else
    return nil
    #endif
}
let memory = try bytesPerCall()

let decode = median(decodeOnly)
let total = median(decodeAndApply)
print("| measure | median of \(runs) runs |")
print("|---|---|")
print("| decode only (baseline), ns per event | \(Int(decode)) |")
print("| decode + state update, ns per event (\(participants) participants) | \(Int(total)) |")
print("| ratio to the baseline | \(String(format: "%.2f", total / decode)) |")
print("| state update alone, ns per event | \(Int(total - decode)) |")
if let memory { print("| heap per call state with \(participants) participants | \(Int(memory)) bytes |") }
print(#"{"bench":"client","runs":\#(runs),"events":\#(eventCount),"participants":\#(participants),"decode_ns":\#(Int(decode)),"total_ns":\#(Int(total)),"ratio":\#(String(format: "%.3f", total / decode)),"bytes_per_call":\#(memory.map { String(Int($0)) } ?? "null"),"checksum":\#(checksum)}"#)
