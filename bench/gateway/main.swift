// `scripts/bench gateway`: the call protocol's pure core on one node, with no store or sockets:
// what the single-daemon path costs per request, to see that cluster machinery (forwarding,
// presence, connections between nodes: ADR 0012) adds nothing there.
//
//   switchboard-gateway-bench [--runs N] [--clients N] [--rounds N]
//   switchboard-gateway-bench --once [--clients N] [--rounds N]   (one unchecked run, for callgrind)
//
// Each run: `clients` sockets authenticate; in groups of four they join one meeting; each
// client then sends `rounds` custom events and `rounds` signals to the next member of its call;
// every client leaves; the deadlines are ticked. Per run, the time per request; the median of
// the runs. The last line is JSON.
import Foundation
import SwitchboardCore

var runs = 5, clients = 400, rounds = 10
var once = false
var rest = CommandLine.arguments.dropFirst()
while let flag = rest.popFirst() {
    if flag == "--once" {
        once = true
        continue
    }
    guard let value = rest.popFirst(), let number = Int(value), number > 0 else { fatalError("\(flag) needs a positive number") }
    switch flag {
    case "--runs": runs = number
    case "--clients": clients = number
    case "--rounds": rounds = number
    default: fatalError("usage: switchboard-gateway-bench [--runs N] [--clients N] [--rounds N] [--once]")
    }
}

/// No SFUs: calls are peer to peer.
struct NoSFU: CallPlacer {
    func place(_ cid: CallCID, participants: [LocationHint], current: SFUAssignment?, now: Date, out: inout CallOutput) throws(SwitchboardError) -> SFUAssignment? {
        nil
    }
}

/// One run; returns the requests sent and the frames put out (so nothing is optimized away, and
/// both builds of an A/B can be seen to do the same work). `checking`, every request must
/// succeed (a run before the timed ones: the check reads every frame).
func run(clients: Int, rounds: Int, checking: Bool = false) -> (requests: Int, frames: Int) {
    var gateway = CallGateway(configuration: CallConfiguration())
    var serial = 0
    let newID = { () -> String in
        serial += 1
        return "id-\(serial)"
    }
    var now = Date(timeIntervalSince1970: 1_800_000_000)
    var frames = 0, requests = 0
    func step(_ body: (inout CallGateway, inout CallGatewayOutput) -> Void) {
        var output = CallGatewayOutput()
        body(&gateway, &output)
        gateway.clearRefusals()
        frames += output.commands.count
        for case .send(_, let bytes) in output.commands where checking && String(decoding: bytes, as: UTF8.self).contains(#""type":"error""#) {
            fatalError("a request failed: \(String(decoding: bytes, as: UTF8.self))")
        }
    }
    let sockets = (0..<clients).map { ConnectionID(thread: 0, serial: UInt64($0 + 1)) }
    var sessions: [Int: String] = [:]
    for (index, socket) in sockets.enumerated() {
        step { gateway, output in
            gateway.socketOpened(socket, token: nil, resume: nil, remoteAddress: "198.51.100.\(index % 250)", now: now, into: &output)
            gateway.frameReceived(socket, Array(#"{"id":0,"type":"auth","token":"t"}"#.utf8), placer: NoSFU(), newID: newID, now: now, into: &output)
            let token = UserToken(userID: "user-\(index)", issuedAt: now, expiresAt: now.addingTimeInterval(86_400))
            gateway.tokenChecked(socket, purpose: .auth(id: .number(0), resume: nil), result: .success(token), placer: NoSFU(), now: now, newID: newID, into: &output)
        }
    }
    func send(_ index: Int, _ text: String) {
        requests += 1
        step { gateway, output in gateway.frameReceived(sockets[index], Array(text.utf8), placer: NoSFU(), newID: newID, now: now, into: &output) }
    }
    for index in 0..<clients {
        send(index, #"{"id":1,"type":"call.join","data":{"type":"default","id":"room-\#(index / 4)","create":true}}"#)
    }
    for (index, _) in sockets.enumerated() {
        // The session ids are numbered in join order: read them back from the engine.
        let connection = gateway.clients.first { $0.value.socket == sockets[index] }?.key
        if let connection, let session = gateway.engine.sessions(of: connection).first { sessions[index] = session.rawValue }
    }
    for round in 0..<rounds {
        now = now.addingTimeInterval(1)
        for index in 0..<clients {
            send(index, #"{"id":\#(2 + round),"type":"call.send_event","data":{"type":"default","id":"room-\#(index / 4)","custom":{"n":\#(round)}}}"#)
            let peer = index / 4 * 4 + (index + 1) % 4
            if peer < clients, let target = sessions[peer] {
                send(index, #"{"id":"s\#(round)","type":"signal.send","data":{"to_session":"\#(target)","kind":"candidate","payload":{"candidate":"c\#(round)"}}}"#)
            }
        }
        step { gateway, output in gateway.tick(now: now, into: &output) }
    }
    for index in 0..<clients { send(index, #"{"id":99,"type":"call.leave","data":{"type":"default","id":"room-\#(index / 4)"}}"#) }
    step { gateway, output in gateway.tick(now: now.addingTimeInterval(1), into: &output) }
    return (requests, frames)
}

if once {
    // Unchecked: callgrind counts the gateway's work, not the bench's reading of every frame.
    let (requests, frames) = run(clients: clients, rounds: rounds)
    print("requests \(requests), frames \(frames)")
    exit(0)
}
var perRequest: [Double] = []
var checksum = run(clients: clients, rounds: rounds, checking: true).frames
for _ in 0..<runs {
    let started = DispatchTime.now().uptimeNanoseconds
    let (requests, frames) = run(clients: clients, rounds: rounds)
    let elapsed = Double(DispatchTime.now().uptimeNanoseconds - started)
    perRequest.append(elapsed / Double(requests))
    checksum = frames
    print(String(format: "run: %d requests, %d frames, %.0f ns per request", requests, frames, elapsed / Double(requests)))
}
let median = perRequest.sorted()[perRequest.count / 2]
print(String(format: "median: %.0f ns per request (%d runs of %d clients, %d rounds)", median, runs, clients, rounds))
print(#"{"bench":"gateway","runs":\#(runs),"clients":\#(clients),"rounds":\#(rounds),"frames":\#(checksum),"median_ns_per_request":\#(Int(median))}"#)
