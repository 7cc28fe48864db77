import Foundation
import Logging
import MetricsTestKit
import SwitchboardApp
import SwitchboardCore
import SwitchboardTesting
import XCTest

@testable import SwitchboardServer

/// The tunnel's bus carries the call hubs' batches (ADR 0012, step 3): two nodes, each with a
/// tunnel on an in-memory bus and a call hub running the calls it claims on the twins of the
/// store and `call_owner`, sharing them through the tunnels.
final class ClusterTunnelCallsTests: XCTestCase {
    private let nodes = NodeHubs()
    private let network = InMemoryNodeBus.Network()
    private let metrics = TestMetrics()

    private struct Node {
        let hub: CallHub
        let transport: InMemoryTransport
        let tunnel: ClusterTunnel
    }

    private func node(_ id: String, peer: String) throws -> Node {
        let (hub, transport, _) = nodes.hub(id)
        let tunnel = ClusterTunnel(
            bus: network.bus(for: id), local: transport, lease: .seconds(2), clock: ManualClock(), factory: metrics, logger: Logger(label: "test.\(id)"))
        hub.shareCalls(peers: { [peer] }, send: { [weak tunnel] in tunnel?.sendCalls($0) })
        tunnel.callsArrived = { [weak hub] batch, from in hub?.forwardArrived(batch, from: from) }
        tunnel.start(timer: false)
        try hub.start(transport: transport)
        return Node(hub: hub, transport: transport, tunnel: tunnel)
    }

    /// Polls until `socket` got a frame `matching`, for up to 5 s; returns it.
    private func frame(
        _ node: Node, _ socket: ConnectionID, file: StaticString = #filePath, line: UInt = #line, matching: ([String: Any]) -> Bool
    ) -> [String: Any]? {
        let deadline = Date(timeIntervalSinceNow: 5)
        var seen: [[String: Any]] = []
        while Date() < deadline {
            seen += node.transport.drain().compactMap { command -> [String: Any]? in
                guard case .send(let target, let bytes) = command, target == socket else { return nil }
                return try? JSONSerialization.jsonObject(with: Data(bytes)) as? [String: Any]
            }
            if let found = seen.first(where: matching) { return found }
            usleep(1_000)
        }
        XCTFail("no such frame; got \(seen)", file: file, line: line)
        return nil
    }

    func test_aRequestForACallTheOtherNodeRunsCrossesTheBusBothWays() async throws {
        let a = try node("A", peer: "B"), b = try node("B", peer: "A")
        let deadline = Date(timeIntervalSinceNow: 5)
        while !(a.tunnel.listening && b.tunnel.listening), Date() < deadline { usleep(1_000) }
        let bob = nodes.connect(a.hub, a.transport, "bob"), carol = nodes.connect(b.hub, b.transport, "carol")

        a.hub.queue.sync {
            a.hub.receive([.message(bob, Array(#"{"id":1,"type":"call.join","data":{"type":"ringing","id":"r","create":true,"members":["carol"],"ring":true}}"#.utf8), isBinary: false)])
        }
        let ring = frame(b, carol) { $0["type"] as? String == "call.ring" }
        XCTAssertEqual(ring?["call_cid"] as? String, "ringing:r")

        b.hub.queue.sync {
            b.hub.receive([.message(carol, Array(#"{"id":2,"type":"call.accept","data":{"type":"ringing","id":"r"}}"#.utf8), isBinary: false)])
        }
        let answer = frame(b, carol) { $0["id"] as? Int == 2 }
        XCTAssertEqual(answer?["type"] as? String, "response", "\(String(describing: answer))")
        XCTAssertNotNil(frame(a, bob) { $0["type"] as? String == "call.accepted" }, "the caller on the owner hears it")
        XCTAssertEqual(try nodes.base.loadCall(CallCID(type: "ringing", id: "r")!)?.members.first { $0.userID.rawValue == "carol" }?.ringState, .accepted)

        a.hub.stop()
        b.hub.stop()
        await a.tunnel.stop()
        await b.tunnel.stop()
    }
}
