import SwitchboardCore
import XCTest

/// A relaying node's refusals: while it takes the lead (``TunnelFront/refusingAll(_:)``) and
/// while it drains (``TunnelFront/draining(_:into:now:)``).
final class TunnelRefusalTests: XCTestCase {
    private let leader = TunnelFront.Leader(node: "node-a", generation: 2)
    private let upgrade = WebSocketUpgrade(path: "/v1/connect", remoteAddress: "198.51.100.4:4000")
    private let get = HTTPRequest(method: "GET", path: "/peerjs/id")
    private func id(_ serial: UInt64) -> ConnectionID { ConnectionID(thread: 0, serial: serial) }
    private let now = MonotonicTime(nanoseconds: 1_000)

    func test_takingTheLeadRefusesSocketsWith1013AndRequestsWith503() {
        let output = TunnelFront.refusingAll([.opened(id(1), upgrade), .message(id(1), [1], isBinary: false), .request(id(2), get), .closed(id(1))])
        XCTAssertNil(output.toLeader?.batch)
        XCTAssertEqual(
            output.local,
            [.close(id(1), .tryAgainLater, reason: "no leading node is reachable"),
             .respond(id(2), SwitchboardError(.unavailable, "no leading node is reachable; try again").httpResponse)])
    }

    func test_whileTheLeadersLeaseLapsedExistingSocketsCarryOnButNewOnesAreRefused() {
        var front = TunnelFront()
        _ = front.follow(leader)
        _ = front.received([.opened(id(1), upgrade)], now: now)
        front.paused = true
        let output = front.received([.message(id(1), [1], isBinary: false), .opened(id(2), upgrade), .request(id(3), get)], now: now)
        XCTAssertEqual(output.toLeader?.batch, TunnelBatch(generation: 2, events: [.message(id(1), [1], isBinary: false)]))
        XCTAssertEqual(
            output.local,
            [.close(id(2), .tryAgainLater, reason: "no leading node is reachable"),
             .respond(id(3), SwitchboardError(.unavailable, "no leading node is reachable; try again").httpResponse)])
        XCTAssertEqual(front.sockets, [id(1)])
        front.paused = false
        XCTAssertEqual(front.received([.opened(id(4), upgrade)], now: now).toLeader?.batch, TunnelBatch(generation: 2, events: [.opened(id(4), upgrade)]))
    }

    func test_aDrainingFrontClosesNewSocketsWith1001AndRelaysTheRest() {
        var front = TunnelFront()
        _ = front.follow(leader)
        _ = front.received([.opened(id(1), upgrade)], now: now)
        let output = TunnelFront.draining(
            [.message(id(1), [7], isBinary: true), .opened(id(2), upgrade), .message(id(2), [8], isBinary: true), .request(id(3), get), .closed(id(2))],
            into: &front, now: now)
        XCTAssertEqual(output.local, [.close(id(2), .goingAway, reason: "server is draining")])
        // The socket open before the drain and the request go on to the leader; the refused one does not.
        XCTAssertEqual(output.toLeader?.leader, leader)
        XCTAssertEqual(output.toLeader?.batch, TunnelBatch(generation: 2, events: [.message(id(1), [7], isBinary: true), .request(id(3), get)]))
        XCTAssertEqual(front.sockets, [id(1)])
        XCTAssertEqual(Set(front.pending.keys), [id(3)])
    }
}
