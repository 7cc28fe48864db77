import SwitchboardCore
import XCTest

private func time(_ milliseconds: Int64) -> MonotonicTime { MonotonicTime(nanoseconds: milliseconds * 1_000_000) }
private func local(_ serial: UInt64) -> ConnectionID { ConnectionID(thread: 1, serial: serial) }
private func relayed(_ serial: UInt64) -> ConnectionID { ConnectionID(thread: 255, serial: serial) }
private let upgrade = WebSocketUpgrade(path: "/v1/connect", query: [:], remoteAddress: "198.51.100.4:4000")
private func message(_ id: ConnectionID, _ n: Int) -> TransportEvent { .message(id, Array(#"{"n":\#(n)}"#.utf8), isBinary: false) }

/// Flow control across the bus: a relaying node's transport counts a socket's messages until the
/// leader's hubs handled them, so a client that outpaces the leader is paused at its own socket.
final class TunnelFlowControlTests: XCTestCase {
    private let leaderA = TunnelFront.Leader(node: "node-a", generation: 4)

    private func front(reporting: Bool) -> TunnelFront {
        var front = TunnelFront()
        _ = front.follow(leaderA)
        _ = front.received([.opened(local(1), upgrade), .opened(local(2), upgrade)], now: time(0))
        if reporting { _ = front.fromLeader(TunnelBatch(generation: 4, reports: true), node: "node-a") }
        return front
    }

    /// A leader of an older build says nothing of reports: messages count until the bus took them.
    func test_withALeaderThatDoesNotReport_messagesAreHandledOnceSent() throws {
        var front = front(reporting: false)
        XCTAssertFalse(front.leaderReports)
        let output = front.received([message(local(1), 1), message(local(2), 2), message(local(9), 3)], now: time(1))
        let batch = try XCTUnwrap(output.toLeader?.batch)
        XCTAssertFalse(batch.reports)
        XCTAssertEqual(batch.events, [message(local(1), 1), message(local(2), 2)])
        XCTAssertEqual(output.handledOnSend, [message(local(1), 1), message(local(2), 2)])
        XCTAssertEqual(output.handled, [message(local(9), 3)], "a message of a socket not relayed counts nothing")
    }

    func test_withAReportingLeader_messagesAreHeldUntilReportedInOrder() throws {
        var front = front(reporting: true)
        XCTAssertTrue(front.leaderReports)
        let sent = [message(local(1), 1), message(local(2), 2), message(local(1), 3), message(local(1), 4)]
        let output = front.received(sent, now: time(1))
        XCTAssertEqual(output.toLeader?.batch, TunnelBatch(generation: 4, events: sent, reports: true))
        XCTAssertEqual(output.handledOnSend, [])
        XCTAssertEqual(output.handled, [])

        let first = front.fromLeader(TunnelBatch(generation: 4, handled: [local(1): 2]), node: "node-a")
        XCTAssertEqual(first.handled, [message(local(1), 1), message(local(1), 3)], "oldest first")
        XCTAssertEqual(first.local, [])
        // More than is held is capped; an unknown socket's count is ignored.
        let second = front.fromLeader(TunnelBatch(generation: 4, handled: [local(1): 5, local(2): 1, local(7): 3]), node: "node-a")
        XCTAssertEqual(second.handled, [message(local(1), 4), message(local(2), 2)])
        XCTAssertEqual(front.fromLeader(TunnelBatch(generation: 4, handled: [local(1): 1]), node: "node-a").handled, [])
    }

    func test_reportsOfAnotherGenerationOrNodeAreIgnored() {
        var front = front(reporting: false)
        _ = front.fromLeader(TunnelBatch(generation: 3, reports: true), node: "node-a")
        _ = front.fromLeader(TunnelBatch(generation: 4, reports: true), node: "node-b")
        XCTAssertFalse(front.leaderReports)
        var reporting = self.front(reporting: true)
        _ = reporting.received([message(local(1), 1)], now: time(1))
        XCTAssertEqual(reporting.fromLeader(TunnelBatch(generation: 5, handled: [local(1): 1]), node: "node-a").handled, [])
        XCTAssertEqual(reporting.fromLeader(TunnelBatch(generation: 4, handled: [local(1): 1]), node: "node-b").handled, [])
        XCTAssertEqual(reporting.fromLeader(TunnelBatch(generation: 4, handled: [local(1): 1]), node: "node-a").handled, [message(local(1), 1)])
    }

    /// A closed socket's held messages go with it (the transport forgets the socket), and a new
    /// leader starts without reports until it says it makes them.
    func test_aClosedSocketOrANewLeaderDropsWhatIsHeld() throws {
        var front = front(reporting: true)
        _ = front.received([message(local(1), 1), message(local(2), 2)], now: time(1))
        _ = front.received([.closed(local(1))], now: time(2))
        XCTAssertEqual(front.fromLeader(TunnelBatch(generation: 4, handled: [local(1): 1, local(2): 1]), node: "node-a").handled, [message(local(2), 2)])

        _ = front.received([message(local(2), 3)], now: time(3))
        _ = front.follow(TunnelFront.Leader(node: "node-b", generation: 5))
        XCTAssertFalse(front.leaderReports)
        _ = front.received([.opened(local(3), upgrade)], now: time(4))
        let output = front.received([message(local(3), 4)], now: time(5))
        XCTAssertEqual(output.toLeader?.batch.reports, false)
        XCTAssertEqual(output.handledOnSend, [message(local(3), 4)])
    }

    /// Without a leader, or while draining, messages that go nowhere count nothing at once.
    func test_messagesThatAreNotRelayedAreHandledAtOnce() {
        XCTAssertEqual(TunnelFront.refusingAll([.opened(local(1), upgrade), message(local(1), 1)]).handled, [message(local(1), 1)])
        var front = front(reporting: true)
        let output = TunnelFront.draining([.opened(local(5), upgrade), message(local(5), 1), message(local(1), 2)], into: &front, now: time(1))
        XCTAssertEqual(output.handled, [message(local(5), 1)])
        XCTAssertEqual(output.toLeader?.batch.events, [message(local(1), 2)])
    }

    // MARK: - The leader

    func test_theLeaderReportsHandledMessagesOfBatchesThatAskWithTheNodesIds() {
        var leader = TunnelLeader()
        let mapped = leader.inbound(from: "node-b", [.opened(local(1), upgrade), message(local(1), 1), message(local(1), 2)], reports: true)
        XCTAssertEqual(mapped, [.opened(relayed(1), upgrade), message(relayed(1), 1), message(relayed(1), 2)])
        XCTAssertEqual(leader.reports, [:], "nothing until the hubs handled them")
        leader.handled([message(relayed(1), 1), message(ConnectionID(thread: 0, serial: 1), 9)])
        XCTAssertEqual(leader.takeReports(), ["node-b": [local(1): 1]])
        XCTAssertEqual(leader.takeReports(), [:])
        leader.handled([message(relayed(1), 2)])
        XCTAssertEqual(leader.takeReports(), ["node-b": [local(1): 1]])
    }

    /// A node asks from some batch on: the messages of its earlier batches, counted on send
    /// there, are not reported (they would release later messages early).
    func test_messagesOfBatchesThatDidNotAskAreNeverReported() {
        var leader = TunnelLeader()
        _ = leader.inbound(from: "node-b", [.opened(local(1), upgrade), message(local(1), 1), message(local(1), 2)])
        _ = leader.inbound(from: "node-b", [message(local(1), 3)], reports: true)
        leader.handled([message(relayed(1), 1)])
        leader.handled([message(relayed(1), 2)])
        XCTAssertEqual(leader.takeReports(), [:])
        leader.handled([message(relayed(1), 3)])
        XCTAssertEqual(leader.takeReports(), ["node-b": [local(1): 1]])
    }

    /// A message for a connection the leader does not know is reported at once (it reaches no
    /// hub), so the node never waits on it; one for a closed connection is not (the node dropped it).
    func test_unknownConnectionsAreReportedAtOnceAndClosedOnesNever() {
        var leader = TunnelLeader()
        XCTAssertEqual(leader.inbound(from: "node-b", [message(local(4), 1), message(local(4), 2)], reports: true), [])
        XCTAssertEqual(leader.takeReports(), ["node-b": [local(4): 2]])
        _ = leader.inbound(from: "node-b", [.opened(local(1), upgrade), message(local(1), 1), .closed(local(1))], reports: true)
        leader.handled([message(relayed(1), 1)])
        XCTAssertEqual(leader.takeReports(), [:])
    }

    /// A socket whose messages reach a leader that no longer holds it (it dropped the node's
    /// connections) is closed there with 1012, whether its batch asked for reports or not.
    func test_aSocketTheLeaderNoLongerHoldsIsClosedOnItsNode() {
        var leader = TunnelLeader()
        _ = leader.inbound(from: "node-b", [.opened(local(1), upgrade), .opened(local(2), upgrade)])
        XCTAssertEqual(leader.drop(node: "node-b"), [.closed(relayed(1)), .closed(relayed(2))])
        _ = leader.inbound(from: "node-b", [message(local(2), 1), message(local(2), 2), message(local(1), 3)])
        _ = leader.inbound(from: "node-c", [message(local(1), 4)], reports: true)
        XCTAssertEqual(leader.takeOrphans(), [
            "node-b": [.close(local(1), .serviceRestart, reason: TunnelLeader.orphanedReason), .close(local(2), .serviceRestart, reason: TunnelLeader.orphanedReason)],
            "node-c": [.close(local(1), .serviceRestart, reason: TunnelLeader.orphanedReason)],
        ])
        XCTAssertEqual(leader.takeOrphans(), [:])
        // A socket it holds, and the closed event of one it does not, orphan nothing.
        _ = leader.inbound(from: "node-b", [.opened(local(3), upgrade), message(local(3), 5), .closed(local(9))])
        XCTAssertEqual(leader.orphans, [:])
    }

    func test_reportsAndHandledCountsRoundTripOnTheWireAndOldBatchesDecode() throws {
        let batch = TunnelBatch(generation: 7, reports: true, handled: [local(2): 3, relayed(9): 1])
        XCTAssertEqual(try TunnelBatch.decode(batch.encoded()), batch)
        let old = try TunnelBatch.decode(#"{"g":7,"c":[]}"#)
        XCTAssertFalse(old.reports)
        XCTAssertEqual(old.handled, [:])
        XCTAssertThrowsError(try TunnelBatch.decode(#"{"g":7,"h":[[1]]}"#))
        XCTAssertThrowsError(try TunnelBatch.decode(#"{"g":7,"h":[[1,0]]}"#), "a count of none")
        XCTAssertFalse(TunnelBatch(generation: 7).encoded().contains("\"r\""), "a batch that does not report says nothing")
    }
}
