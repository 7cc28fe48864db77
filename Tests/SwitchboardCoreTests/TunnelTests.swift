import SwitchboardCore
import XCTest

private func time(_ milliseconds: Int64) -> MonotonicTime { MonotonicTime(nanoseconds: milliseconds * 1_000_000) }
private func local(_ serial: UInt64) -> ConnectionID { ConnectionID(thread: 1, serial: serial) }
private func relayed(_ serial: UInt64) -> ConnectionID { ConnectionID(thread: 255, serial: serial) }
private let upgrade = WebSocketUpgrade(path: "/peerjs", query: ["id": "alice"], remoteAddress: "198.51.100.4:4000")
private let get = HTTPRequest(method: "GET", path: "/peerjs/id", remoteAddress: "198.51.100.4:4001")
private let frame = Array(#"{"type":"HEARTBEAT"}"#.utf8)

final class TunnelFrontTests: XCTestCase {
    private let leaderA = TunnelFront.Leader(node: "node-a", generation: 4)
    private let leaderB = TunnelFront.Leader(node: "node-b", generation: 5)
    private let noLeader = SwitchboardError(.unavailable, "no leading node is reachable; try again").httpResponse
    private let leaderChanged = SwitchboardError(.unavailable, "the leading node changed; try again").httpResponse
    private let cut = "the leading node changed; reconnect"

    private func assertNothing(_ output: TunnelFront.Output, file: StaticString = #filePath, line: UInt = #line) {
        XCTAssertNil(output.toLeader.map { "\($0.leader): \($0.batch)" }, file: file, line: line)
        XCTAssertEqual(output.local, [], file: file, line: line)
    }

    private func following(_ leader: TunnelFront.Leader, requestTimeout: Duration = .seconds(10)) -> TunnelFront {
        var front = TunnelFront(requestTimeout: requestTimeout)
        XCTAssertEqual(front.follow(leader), [])
        return front
    }

    func test_withoutALeader_socketsAreRefusedWith1013AndRequestsAnswered503() {
        var front = TunnelFront()
        let output = front.received([.opened(local(1), upgrade), .message(local(1), frame, isBinary: false), .request(local(2), get)], now: time(0))
        XCTAssertNil(output.toLeader)
        XCTAssertEqual(output.local, [.close(local(1), .tryAgainLater, reason: "no leading node is reachable"), .respond(local(2), noLeader)])
        XCTAssertEqual(CloseCode.tryAgainLater.rawValue, 1013)
        XCTAssertEqual(noLeader.status, 503)
        XCTAssertEqual(String(decoding: noLeader.body, as: UTF8.self), #"{"error":{"code":"unavailable","message":"no leading node is reachable; try again"}}"#)
        XCTAssertNil(front.leader)
        XCTAssertEqual(front.sockets, [])
        XCTAssertEqual(front.pending, [:])
        assertNothing(front.received([.closed(local(1))], now: time(1)))
        XCTAssertEqual(front.tick(now: time(60_000)), [])
    }

    func test_afterFollow_eventsGoToTheLeaderInOneBatchOfItsGeneration() throws {
        var front = following(leaderA)
        XCTAssertEqual(front.leader, leaderA)
        let events: [TransportEvent] = [
            .opened(local(1), upgrade), .message(local(1), frame, isBinary: false), .message(local(1), [0xFF], isBinary: true), .request(local(2), get),
        ]
        let output = front.received(events, now: time(1_000))
        let toLeader = try XCTUnwrap(output.toLeader)
        XCTAssertEqual(toLeader.leader, leaderA)
        XCTAssertEqual(toLeader.batch, TunnelBatch(generation: 4, events: events))
        XCTAssertEqual(output.local, [])
        XCTAssertEqual(front.sockets, [local(1)])
        XCTAssertEqual(front.pending, [local(2): MonotonicTime(nanoseconds: 11_000_000_000)])
    }

    func test_messagesOfUnknownSocketsAreDropped() throws {
        var front = following(leaderA)
        assertNothing(front.received([.message(local(9), frame, isBinary: false), .closed(local(9))], now: time(0)))
        let output = front.received(
            [.opened(local(1), upgrade), .message(local(9), frame, isBinary: false), .message(local(1), frame, isBinary: false)], now: time(0))
        XCTAssertEqual(output.toLeader?.batch.events, [.opened(local(1), upgrade), .message(local(1), frame, isBinary: false)])
    }

    func test_theClosedOfARelayedSocketIsForwarded() throws {
        var front = following(leaderA)
        _ = front.received([.opened(local(1), upgrade), .opened(local(2), upgrade)], now: time(0))
        let output = front.received([.closed(local(1))], now: time(5))
        XCTAssertEqual(output.toLeader?.leader, leaderA)
        XCTAssertEqual(output.toLeader?.batch, TunnelBatch(generation: 4, events: [.closed(local(1))]))
        XCTAssertEqual(front.sockets, [local(2)])
        assertNothing(front.received([.message(local(1), frame, isBinary: false), .closed(local(1))], now: time(6)))
        XCTAssertEqual(front.fromLeader(TunnelBatch(generation: 4, commands: [.send(local(1), frame)]), node: "node-a").local, [])
    }

    func test_anotherLeaderCutsSocketsWith1012AndAnswersPendingRequests503() throws {
        var front = following(leaderA)
        _ = front.received([.opened(local(3), upgrade), .opened(local(1), upgrade), .request(local(2), get)], now: time(0))
        XCTAssertEqual(
            front.follow(leaderB), [.close(local(1), .serviceRestart, reason: cut), .close(local(3), .serviceRestart, reason: cut), .respond(local(2), leaderChanged)])
        XCTAssertEqual(CloseCode.serviceRestart.rawValue, 1012)
        XCTAssertEqual(leaderChanged.status, 503)
        XCTAssertEqual(front.leader, leaderB)
        XCTAssertEqual(front.sockets, [])
        XCTAssertEqual(front.pending, [:])

        // The old leader's commands are dropped, whatever generation they claim.
        let old = [OutboundCommand.send(local(1), frame), .close(local(3), .normal, reason: "bye"), .respond(local(2), HTTPResponse(status: 200))]
        XCTAssertEqual(front.fromLeader(TunnelBatch(generation: 4, commands: old), node: "node-a").local, [])
        XCTAssertEqual(front.fromLeader(TunnelBatch(generation: 5, commands: old), node: "node-a").local, [])
        // The new leader never had them either.
        XCTAssertEqual(front.fromLeader(TunnelBatch(generation: 5, commands: old), node: "node-b").local, [])
        // A cut socket's later events go to nobody; new sockets go to the new leader.
        let output = front.received([.message(local(1), frame, isBinary: false), .closed(local(3)), .opened(local(4), upgrade)], now: time(10))
        XCTAssertEqual(output.toLeader?.leader, leaderB)
        XCTAssertEqual(output.toLeader?.batch, TunnelBatch(generation: 5, events: [.opened(local(4), upgrade)]))
        XCTAssertEqual(output.local, [])
        XCTAssertEqual(front.tick(now: time(60_000)), [])
    }

    func test_aNewGenerationOfTheSameNodeIsAnotherLeader() {
        var front = following(leaderA)
        _ = front.received([.opened(local(1), upgrade)], now: time(0))
        XCTAssertEqual(front.follow(leaderA), [])
        XCTAssertEqual(front.sockets, [local(1)])
        let next = TunnelFront.Leader(node: "node-a", generation: 6)
        XCTAssertEqual(front.follow(next), [.close(local(1), .serviceRestart, reason: cut)])
        XCTAssertEqual(front.fromLeader(TunnelBatch(generation: 4, commands: [.send(local(1), frame)]), node: "node-a").local, [])
        XCTAssertEqual(front.fromLeader(TunnelBatch(generation: 6, commands: [.send(local(1), frame)]), node: "node-a").local, [])
    }

    func test_losingTheLeaderCutsSocketsThenRefusesNewOnes() {
        var front = following(leaderA)
        _ = front.received([.opened(local(1), upgrade)], now: time(0))
        XCTAssertEqual(front.follow(nil), [.close(local(1), .serviceRestart, reason: cut)])
        XCTAssertNil(front.leader)
        let output = front.received([.opened(local(2), upgrade), .request(local(3), get)], now: time(1))
        XCTAssertNil(output.toLeader)
        XCTAssertEqual(output.local, [.close(local(2), .tryAgainLater, reason: "no leading node is reachable"), .respond(local(3), noLeader)])
        XCTAssertEqual(front.fromLeader(TunnelBatch(generation: 4, commands: [.send(local(1), frame)]), node: "node-a").local, [])
    }

    func test_fromLeader_dropsABatchOfAnotherGenerationOrNode() {
        var front = following(leaderA)
        _ = front.received([.opened(local(1), upgrade)], now: time(0))
        let commands = [OutboundCommand.send(local(1), frame)]
        XCTAssertEqual(front.fromLeader(TunnelBatch(generation: 3, commands: commands), node: "node-a").local, [])
        XCTAssertEqual(front.fromLeader(TunnelBatch(generation: 5, commands: commands), node: "node-a").local, [])
        XCTAssertEqual(front.fromLeader(TunnelBatch(generation: 4, commands: commands), node: "node-b").local, [])
        XCTAssertEqual(front.fromLeader(TunnelBatch(generation: 4, commands: commands), node: "node-a").local, commands)
    }

    func test_fromLeader_passesSendsAndClosesOnlyForKnownSockets() {
        var front = following(leaderA)
        _ = front.received([.opened(local(1), upgrade), .request(local(2), get)], now: time(0))
        let known: [OutboundCommand] = [.send(local(1), frame), .sendBinary(local(1), [0, 1]), .close(local(1), .normal, reason: "bye")]
        let unknown: [OutboundCommand] = [.send(local(9), frame), .sendBinary(local(9), [2]), .close(local(9), .normal, reason: ""), .send(local(2), frame)]
        let batch = TunnelBatch(generation: 4, commands: [unknown[0], known[0], unknown[1], known[1], unknown[2], unknown[3], known[2]])
        XCTAssertEqual(front.fromLeader(batch, node: "node-a").local, known)
        XCTAssertEqual(front.pending.keys.sorted(), [local(2)])
    }

    func test_fromLeader_passesARespondOnlyOnceForAPendingRequest() {
        var front = following(leaderA)
        _ = front.received([.opened(local(1), upgrade), .request(local(2), get)], now: time(0))
        let ok = HTTPResponse.json(200, Array(#"{"id":"p"}"#.utf8))
        let batch = TunnelBatch(
            generation: 4, commands: [.respond(local(2), ok), .respond(local(2), HTTPResponse(status: 500)), .respond(local(1), ok), .respond(local(7), ok)])
        XCTAssertEqual(front.fromLeader(batch, node: "node-a").local, [.respond(local(2), ok)])
        XCTAssertEqual(front.fromLeader(TunnelBatch(generation: 4, commands: [.respond(local(2), ok)]), node: "node-a").local, [])
        XCTAssertEqual(front.pending, [:])
        XCTAssertEqual(front.tick(now: time(60_000)), [])
    }

    func test_tick_answers504OnlyAfterTheRequestTimeout() {
        var front = following(leaderA, requestTimeout: .milliseconds(1_500))
        _ = front.received([.request(local(5), get)], now: time(1_000))
        _ = front.received([.request(local(3), get), .request(local(2), get)], now: time(2_000))
        XCTAssertEqual(front.tick(now: time(1_000)), [])
        XCTAssertEqual(front.tick(now: MonotonicTime(nanoseconds: 2_499_999_999)), [])
        let late = front.tick(now: time(2_500))
        XCTAssertEqual(late.map(\.connection), [local(5)])
        guard case .respond(_, let response) = late.first else { return XCTFail("\(late)") }
        XCTAssertEqual(response.status, 504)
        XCTAssertEqual(response.contentType, "application/json; charset=utf-8")
        XCTAssertEqual(String(decoding: response.body, as: UTF8.self), #"{"error":{"code":"unavailable","message":"the leading node did not answer in time"}}"#)
        XCTAssertEqual(front.tick(now: time(2_500)), [])
        XCTAssertEqual(front.pending, [local(3): time(3_500), local(2): time(3_500)])
        // The leader's late answer is dropped: the client has its 504.
        XCTAssertEqual(front.fromLeader(TunnelBatch(generation: 4, commands: [.respond(local(5), HTTPResponse(status: 200))]), node: "node-a").local, [])
        // An answer in time cancels the timeout.
        XCTAssertEqual(
            front.fromLeader(TunnelBatch(generation: 4, commands: [.respond(local(3), HTTPResponse(status: 200))]), node: "node-a").local,
            [.respond(local(3), HTTPResponse(status: 200))])
        XCTAssertEqual(front.tick(now: time(9_000)), [.respond(local(2), response)])
        XCTAssertEqual(front.pending, [:])
    }

    func test_reset_keepsTheLeaderButCutsSocketsAndRequests() throws {
        var front = following(leaderA)
        _ = front.received([.opened(local(1), upgrade), .request(local(2), get)], now: time(0))
        let reset = front.reset()
        XCTAssertEqual(reset.local, [.close(local(1), .serviceRestart, reason: cut), .respond(local(2), leaderChanged)])
        // The leader hears the cut socket closed (its hubs free it); the request needs nothing.
        XCTAssertEqual(reset.toLeader?.leader, leaderA)
        XCTAssertEqual(reset.toLeader?.batch, TunnelBatch(generation: 4, events: [.closed(local(1))]))
        XCTAssertEqual(front.leader, leaderA)
        XCTAssertEqual(front.sockets, [])
        XCTAssertEqual(front.pending, [:])
        XCTAssertEqual(front.fromLeader(TunnelBatch(generation: 4, commands: [.send(local(1), frame)]), node: "node-a").local, [])
        let output = front.received([.message(local(1), frame, isBinary: false), .opened(local(3), upgrade)], now: time(1))
        XCTAssertEqual(output.toLeader?.leader, leaderA)
        XCTAssertEqual(output.toLeader?.batch, TunnelBatch(generation: 4, events: [.opened(local(3), upgrade)]))
        XCTAssertEqual(front.fromLeader(TunnelBatch(generation: 4, commands: [.send(local(3), frame)]), node: "node-a").local, [.send(local(3), frame)])
        XCTAssertEqual(front.follow(leaderA), [])

        var idle = TunnelFront()
        XCTAssertEqual(idle.reset().local, [])
        XCTAssertNil(idle.reset().toLeader)
        XCTAssertNil(idle.leader)
    }
}

final class TunnelLeaderTests: XCTestCase {
    private func remote(_ serial: UInt64) -> ConnectionID { ConnectionID(thread: 2, serial: serial) }

    func test_inboundGivesRelayedIdsOfThread255WithDistinctSerials() {
        var leader = TunnelLeader()
        XCTAssertEqual(TunnelLeader.thread, 255)
        let mapped = leader.inbound(from: "n1", [.opened(remote(1), upgrade), .request(remote(2), get), .opened(remote(3), upgrade)])
        XCTAssertEqual(mapped, [.opened(relayed(1), upgrade), .request(relayed(2), get), .opened(relayed(3), upgrade)])
        XCTAssertEqual(mapped.map(\.connection.thread), [255, 255, 255])
        XCTAssertEqual(relayed(1).rawValue, 0xFF00_0000_0000_0001)
        XCTAssertTrue(TunnelLeader.isRelayed(relayed(1)))
        XCTAssertFalse(TunnelLeader.isRelayed(remote(1)))
        XCTAssertFalse(TunnelLeader.isRelayed(ConnectionID(thread: 254, serial: 1)))
        XCTAssertEqual(leader.count, 3)
        XCTAssertEqual(leader.nodes, ["n1"])
        XCTAssertEqual(leader.connections(of: "n1"), [relayed(1), relayed(2), relayed(3)])
        XCTAssertEqual(leader.connections(of: "n2"), [])
    }

    func test_anIdOpenedAgainClosesTheStaleOneForTheHubs() {
        var leader = TunnelLeader()
        XCTAssertEqual(leader.inbound(from: "n1", [.opened(remote(1), upgrade)]), [.opened(relayed(1), upgrade)])
        // The node reuses its id while the leader still holds it: the hubs hear the old one close.
        XCTAssertEqual(leader.inbound(from: "n1", [.opened(remote(1), upgrade)]), [.closed(relayed(1)), .opened(relayed(2), upgrade)])
        XCTAssertEqual(leader.connections(of: "n1"), [relayed(2)])
        XCTAssertEqual(leader.outbound([.send(relayed(1), frame)]).remote, [:])
    }

    func test_twoNodesWithTheSameRemoteIdGetDifferentLocalIds() {
        var leader = TunnelLeader()
        XCTAssertEqual(leader.inbound(from: "n1", [.opened(remote(1), upgrade)]), [.opened(relayed(1), upgrade)])
        XCTAssertEqual(leader.inbound(from: "n2", [.opened(remote(1), upgrade)]), [.opened(relayed(2), upgrade)])
        XCTAssertEqual(leader.inbound(from: "n2", [.message(remote(1), frame, isBinary: false)]), [.message(relayed(2), frame, isBinary: false)])
        XCTAssertEqual(leader.inbound(from: "n1", [.message(remote(1), [7], isBinary: true)]), [.message(relayed(1), [7], isBinary: true)])
        let split = leader.outbound([.send(relayed(1), Array("one".utf8)), .send(relayed(2), Array("two".utf8))])
        XCTAssertEqual(split.local, [])
        XCTAssertEqual(split.remote, ["n1": [.send(remote(1), Array("one".utf8))], "n2": [.send(remote(1), Array("two".utf8))]])
        XCTAssertEqual(leader.count, 2)
        XCTAssertEqual(leader.nodes, ["n1", "n2"])
    }

    func test_messagesAndClosedMapToTheSameLocalId() {
        var leader = TunnelLeader()
        let mapped = leader.inbound(
            from: "n1",
            [.opened(remote(4), upgrade), .message(remote(4), frame, isBinary: false), .message(remote(4), [0xFF], isBinary: true), .closed(remote(4))])
        XCTAssertEqual(mapped, [.opened(relayed(1), upgrade), .message(relayed(1), frame, isBinary: false), .message(relayed(1), [0xFF], isBinary: true), .closed(relayed(1))])
        XCTAssertEqual(leader.count, 0)
        XCTAssertEqual(leader.nodes, [])
        XCTAssertEqual(leader.connections(of: "n1"), [])
    }

    func test_afterClosed_theIdIsForgotten() {
        var leader = TunnelLeader()
        _ = leader.inbound(from: "n1", [.opened(remote(4), upgrade), .opened(remote(5), upgrade)])
        XCTAssertEqual(leader.inbound(from: "n1", [.closed(remote(4))]), [.closed(relayed(1))])
        let split = leader.outbound([.send(relayed(1), frame), .close(relayed(1), .normal, reason: ""), .send(relayed(2), frame)])
        XCTAssertEqual(split.local, [])
        XCTAssertEqual(split.remote, ["n1": [.send(remote(5), frame)]])
        XCTAssertEqual(leader.inbound(from: "n1", [.message(remote(4), frame, isBinary: false), .closed(remote(4))]), [])
        XCTAssertEqual(leader.count, 1)
        // A new socket with the old remote id is a new connection.
        XCTAssertEqual(leader.inbound(from: "n1", [.opened(remote(4), upgrade)]), [.opened(relayed(3), upgrade)])
    }

    func test_inboundDropsEventsOfUnknownConnections() {
        var leader = TunnelLeader()
        _ = leader.inbound(from: "n1", [.opened(remote(1), upgrade)])
        XCTAssertEqual(leader.inbound(from: "n1", [.message(remote(9), frame, isBinary: false), .closed(remote(9))]), [])
        XCTAssertEqual(leader.inbound(from: "n2", [.message(remote(1), frame, isBinary: false), .closed(remote(1))]), [])
        XCTAssertEqual(leader.count, 1)
        XCTAssertEqual(leader.nodes, ["n1"])
    }

    func test_outboundSplitsLocalAndRemoteAndReaddresses() {
        var leader = TunnelLeader()
        _ = leader.inbound(from: "n1", [.opened(remote(7), upgrade)])
        _ = leader.inbound(from: "n2", [.opened(remote(3), upgrade), .request(remote(8), get)])
        let own = ConnectionID(thread: 0, serial: 1)
        let ok = HTTPResponse(status: 200, contentType: "text/plain", headers: [("X-B", "2"), ("X-A", "1")], body: Array("ok".utf8))
        let split = leader.outbound([
            .send(own, frame), .send(relayed(1), Array("a".utf8)), .sendBinary(relayed(2), [9]), .close(own, .goingAway, reason: "drain"),
            .close(relayed(1), .policyViolation, reason: "bad"), .send(relayed(99), frame), .respond(relayed(3), ok), .send(relayed(1), Array("b".utf8)),
        ])
        XCTAssertEqual(split.local, [.send(own, frame), .close(own, .goingAway, reason: "drain")])
        XCTAssertEqual(
            split.remote,
            [
                "n1": [.send(remote(7), Array("a".utf8)), .close(remote(7), .policyViolation, reason: "bad"), .send(remote(7), Array("b".utf8))],
                "n2": [.sendBinary(remote(3), [9]), .respond(remote(8), ok)],
            ])
        // A close command does not forget the socket: its `closed` still comes back for the hubs.
        XCTAssertEqual(leader.inbound(from: "n1", [.closed(remote(7))]), [.closed(relayed(1))])
    }

    func test_aRespondForgetsTheRequest() {
        var leader = TunnelLeader()
        _ = leader.inbound(from: "n1", [.request(remote(5), get), .opened(remote(6), upgrade)])
        XCTAssertEqual(leader.count, 2)
        let ok = HTTPResponse(status: 204)
        XCTAssertEqual(leader.outbound([.respond(relayed(1), ok)]).remote, ["n1": [.respond(remote(5), ok)]])
        XCTAssertEqual(leader.count, 1)
        XCTAssertEqual(leader.connections(of: "n1"), [relayed(2)])
        let again = leader.outbound([.respond(relayed(1), ok)])
        XCTAssertEqual(again.local, [])
        XCTAssertEqual(again.remote, [:])
        XCTAssertEqual(leader.drop(node: "n1"), [.closed(relayed(2))])
    }

    func test_dropReturnsClosedForEachSocketOfThatNodeOnly() {
        var leader = TunnelLeader()
        _ = leader.inbound(from: "n1", [.opened(remote(2), upgrade), .opened(remote(1), upgrade)])
        _ = leader.inbound(from: "n2", [.opened(remote(1), upgrade)])
        _ = leader.inbound(from: "n1", [.opened(remote(3), upgrade)])
        XCTAssertEqual(leader.drop(node: "n1"), [.closed(relayed(1)), .closed(relayed(2)), .closed(relayed(4))])
        XCTAssertEqual(leader.count, 1)
        XCTAssertEqual(leader.nodes, ["n2"])
        XCTAssertEqual(leader.connections(of: "n1"), [])
        XCTAssertEqual(leader.drop(node: "n1"), [])
        XCTAssertEqual(leader.drop(node: "nobody"), [])
        XCTAssertEqual(leader.inbound(from: "n1", [.message(remote(1), frame, isBinary: false), .closed(remote(2))]), [])
        let split = leader.outbound([.send(relayed(1), frame), .send(relayed(3), frame)])
        XCTAssertEqual(split.remote, ["n2": [.send(remote(1), frame)]])
        XCTAssertEqual(leader.inbound(from: "n2", [.closed(remote(1))]), [.closed(relayed(3))])
    }

    func test_dropAllClosesEveryNodesSockets() {
        var leader = TunnelLeader()
        _ = leader.inbound(from: "zeta", [.opened(remote(1), upgrade)])
        _ = leader.inbound(from: "alpha", [.opened(remote(1), upgrade), .opened(remote(2), upgrade)])
        XCTAssertEqual(leader.nodes, ["alpha", "zeta"])
        XCTAssertEqual(leader.count, 3)
        XCTAssertEqual(leader.dropAll(), [.closed(relayed(2)), .closed(relayed(3)), .closed(relayed(1))])
        XCTAssertEqual(leader.count, 0)
        XCTAssertEqual(leader.nodes, [])
        XCTAssertEqual(leader.dropAll(), [])
        XCTAssertEqual(leader.outbound([.send(relayed(1), frame)]).remote, [:])
        // Serials keep counting: a later connection does not reuse a dropped id.
        XCTAssertEqual(leader.inbound(from: "zeta", [.opened(remote(1), upgrade)]), [.opened(relayed(4), upgrade)])
    }
}

extension TransportEvent {
    fileprivate var connection: ConnectionID {
        switch self {
        case .opened(let id, _), .message(let id, _, _), .closed(let id), .request(let id, _): id
        }
    }
}
