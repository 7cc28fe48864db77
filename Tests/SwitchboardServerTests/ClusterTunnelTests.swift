import Foundation
import Logging
import MetricsTestKit
import SwitchboardCore
import SwitchboardTesting
import Synchronization
import XCTest

@testable import SwitchboardServer

/// ``ClusterTunnel``, the adapter around the pure tunnel halves, with a leader and a relaying
/// node on an in-memory bus (`InMemoryNodeBus`), in-memory transports and one manual clock: the
/// timer's checks run when the test calls ``ClusterTunnel/tick()``, at the time it set.
final class ClusterTunnelTests: XCTestCase {
    /// The leader's hubs: record what they get, and answer as the test says.
    private final class Hub: TransportEventSink, @unchecked Sendable {
        let received = Mutex<[TransportEvent]>([])
        func transportDidReceive(_ events: [TransportEvent]) { received.withLock { $0 += events } }
        var events: [TransportEvent] { received.withLock { $0 } }
    }

    private struct Pair {
        let network = InMemoryNodeBus.Network()
        let clock = ManualClock()
        let metrics = TestMetrics()
        let hub = Hub()
        let leaderTransport = InMemoryTransport()
        let frontTransport = InMemoryTransport()
        let leader: ClusterTunnel
        let front: ClusterTunnel

        init(lease: Duration = .seconds(2), reportDelay: Duration = .milliseconds(5)) {
            leader = ClusterTunnel(
                bus: network.bus(for: "L"), local: leaderTransport, lease: lease, clock: clock, factory: metrics, logger: Logger(label: "test.leader"),
                reportDelay: reportDelay)
            front = ClusterTunnel(
                bus: network.bus(for: "F"), local: frontTransport, lease: lease, clock: clock, factory: metrics, logger: Logger(label: "test.front"))
        }
    }

    private let upgrade = WebSocketUpgrade(path: "/v1/connect", query: [:], remoteAddress: "198.51.100.7:5000")
    private func socket(_ serial: UInt64) -> ConnectionID { ConnectionID(thread: 0, serial: serial) }
    private func relayed(_ serial: UInt64) -> ConnectionID { ConnectionID(thread: 255, serial: serial) }
    private func message(_ id: ConnectionID, _ n: Int) -> TransportEvent { .message(id, Array(#"{"n":\#(n)}"#.utf8), isBinary: false) }

    /// Polls `condition` until it holds, for up to 5 s.
    private func eventually(_ what: String, file: StaticString = #filePath, line: UInt = #line, _ condition: () -> Bool) {
        let deadline = Date(timeIntervalSinceNow: 5)
        while !condition() {
            guard Date() < deadline else { return XCTFail("never: \(what)", file: file, line: line) }
            usleep(1_000)
        }
    }

    /// A leader of generation 1 and a node relaying to it, both listening.
    private func started(lease: Duration = .seconds(2), reportDelay: Duration = .milliseconds(5)) -> Pair {
        let pair = Pair(lease: lease, reportDelay: reportDelay)
        pair.leader.becameLeader()
        pair.leader.lead(hub: pair.hub, generation: 1)
        pair.leader.start(timer: false)
        pair.front.start(timer: false)
        eventually("both listening") { pair.leader.listening && pair.front.listening }
        pair.front.follow(TunnelFront.Leader(node: "L", generation: 1))
        return pair
    }

    private func stop(_ pair: Pair) async {
        await pair.front.stop()
        await pair.leader.stop()
    }

    /// A node whose hub committed what a singleton acts on tells the leader, one notice of a
    /// kind queued at a time; the leader sends itself none, and later notices are not lost.
    func test_noticesReachTheLeadersSingletons() async {
        let pair = Pair()
        let notices = Mutex<[LeaderNotice]>([])
        pair.leader.onLeaderNotice { notice in notices.withLock { $0.append(notice) } }
        pair.leader.becameLeader()
        pair.leader.lead(hub: pair.hub, generation: 1)
        pair.leader.start(timer: false)
        pair.front.start(timer: false)
        eventually("both listening") { pair.leader.listening && pair.front.listening }

        pair.front.notifyLeader(.webhooks)
        pair.leader.notifyLeader(.webhooks)
        pair.front.follow(TunnelFront.Leader(node: "L", generation: 1))
        pair.front.notifyLeader(.webhooks)
        pair.front.notifyLeader(.rooms)
        eventually("the leader heard both") { notices.withLock { $0.count } >= 2 }
        pair.front.transportDidReceive([.opened(socket(1), upgrade)])
        eventually("a batch sent after them arrived") { pair.hub.events.count == 1 }
        XCTAssertEqual(notices.withLock { $0 }, [.webhooks, .rooms], "none before a leader was known, none from the leader itself")

        pair.front.notifyLeader(.webhooks)
        eventually("the next notice arrives too") { notices.withLock { $0.count } == 3 }
        XCTAssertEqual(notices.withLock { $0.last }, .webhooks)
        await stop(pair)
    }

    /// With calls run on every node, a relaying node keeps its call protocol sockets for its
    /// own call hub and relays the rest; once it leads, its kept sockets still go to that hub
    /// and new ones to the signaling hub.
    func test_callSocketsStayWithThisNodesCallHub() async {
        let pair = started()
        let calls = Hub()
        pair.front.keepCallsLocal(path: "/v1/connect", hub: calls)
        let connect = WebSocketUpgrade(path: "/v1/connect", query: [:], remoteAddress: "198.51.100.7:5001")
        let peerjs = WebSocketUpgrade(path: "/peerjs", query: [:], remoteAddress: "198.51.100.7:5002")
        pair.front.transportDidReceive([.opened(socket(1), connect), message(socket(1), 1), .opened(socket(2), peerjs), message(socket(2), 2)])
        XCTAssertEqual(calls.events, [.opened(socket(1), connect), message(socket(1), 1)])
        eventually("the other socket reached the leader") { pair.hub.events.count == 2 }
        XCTAssertEqual(pair.hub.events, [.opened(relayed(1), peerjs), message(relayed(1), 2)], "the leader numbers relayed sockets itself")

        // This node leads now: its hubs take new sockets, its call hub keeps its own.
        let signaling = Hub()
        pair.front.becameLeader()
        pair.front.lead(hub: signaling, generation: 2)
        pair.front.transportDidReceive([message(socket(1), 3), .opened(socket(3), connect), .closed(socket(1)), message(socket(1), 4)])
        XCTAssertEqual(calls.events, [.opened(socket(1), connect), message(socket(1), 1), message(socket(1), 3), .closed(socket(1))])
        XCTAssertEqual(signaling.events, [.opened(socket(3), connect), message(socket(1), 4)], "a closed socket is no longer kept")
        await stop(pair)
    }

    /// The other live nodes are read once a third of a lease, not at every ask.
    func test_peersAreReadEveryThirdOfALease() async {
        let pair = Pair(lease: .seconds(3))
        let reads = Mutex(0)
        let live = Mutex<Set<String>>(["L", "F", "X"])
        pair.front.liveNodes = {
            reads.withLock { $0 += 1 }
            return live.withLock { $0 }
        }
        XCTAssertEqual(pair.front.peers, [])
        pair.front.keepPeers()
        XCTAssertEqual(pair.front.peers, ["L", "X"], "every live node but this one")
        live.withLock { $0 = ["F", "X"] }
        pair.clock.advance(by: .milliseconds(900))
        pair.front.tick()
        XCTAssertEqual(pair.front.peers, ["L", "X"])
        XCTAssertEqual(reads.withLock { $0 }, 1)
        pair.clock.advance(by: .milliseconds(100))
        pair.front.tick()
        XCTAssertEqual(pair.front.peers, ["X"], "L's lease lapsed")
        XCTAssertEqual(reads.withLock { $0 }, 2)
        await stop(pair)
    }

    /// A node that starts keeping peers greets those it read; they keep it as a peer at once,
    /// not at their next read (their calls' events must not miss its clients).
    func test_aNodeThatStartsIsAPeerOfTheOthersAtOnce() async {
        let pair = started()
        pair.leader.liveNodes = { ["L"] }  // read before F registered
        pair.leader.keepPeers()
        XCTAssertEqual(pair.leader.peers, [])
        pair.front.liveNodes = { ["L", "F"] }
        pair.front.keepPeers()
        XCTAssertEqual(pair.front.peers, ["L"])
        eventually("the leader heard F's greeting") { pair.leader.peers == ["F"] }
        await stop(pair)
    }

    /// Two nodes starting together each read the live nodes before the other registered: the
    /// one registered last greets the other at its first turn, and both are peers.
    func test_nodesStartingTogetherBecomePeersOnceRegistered() async {
        let pair = Pair()
        let live = Mutex<Set<String>>(["L"])
        pair.leader.liveNodes = { live.withLock { $0 } }
        pair.front.liveNodes = { live.withLock { $0 } }
        pair.leader.keepPeers()
        pair.front.keepPeers()
        pair.leader.becameLeader()
        pair.leader.start(timer: false)
        pair.front.start(timer: false)
        eventually("both listening") { pair.leader.listening && pair.front.listening }
        pair.leader.lead(hub: pair.hub, generation: 1)
        XCTAssertEqual(pair.leader.peers, [], "F is not registered yet, and its greeting came before L listened")
        XCTAssertEqual(pair.front.peers, ["L"], "L was registered")

        live.withLock { $0 = ["L", "F"] }  // F's first turn registered it
        pair.front.follow(TunnelFront.Leader(node: "L", generation: 1))
        XCTAssertEqual(pair.front.peers, ["L"])
        eventually("the leader heard F's greeting") { pair.leader.peers == ["F"] }
        await stop(pair)
    }

    func test_aRelayedSocketReachesTheLeadersHubsAndTheirCommandsComeBack() async {
        let pair = started()
        pair.front.transportDidReceive([.opened(socket(1), upgrade), message(socket(1), 1)])
        eventually("the hub got both events") { pair.hub.events.count == 2 }
        XCTAssertEqual(pair.hub.events, [.opened(relayed(1), upgrade), message(relayed(1), 1)])

        XCTAssertEqual(pair.leader.submit([.send(relayed(1), Array("hi".utf8)), .close(relayed(1), .normal, reason: "bye")]), [])
        eventually("the commands reached the front's socket") { pair.frontTransport.commands.count == 2 }
        XCTAssertEqual(pair.frontTransport.commands, [.send(socket(1), Array("hi".utf8)), .close(socket(1), .normal, reason: "bye")])
        XCTAssertEqual(try pair.metrics.expectCounter("switchboard_cluster_relayed_total", [("direction", "to_leader")]).totalValue, 2)
        XCTAssertEqual(try pair.metrics.expectCounter("switchboard_cluster_relayed_total", [("direction", "from_leader")]).totalValue, 2)
        await stop(pair)
    }

    /// The front's transport hears a message handled only once the leader's hubs handled it.
    func test_aMessageCountsHandledAtTheFrontOnlyOnceTheLeadersHubsHandledIt() async {
        let pair = started()
        pair.front.transportDidReceive([.opened(socket(1), upgrade)])
        eventually("the open reached the hub") { pair.hub.events.count == 1 }
        // The leader's first batch back says it reports; until then messages count on send.
        _ = pair.leader.submit([.send(relayed(1), Array("ready".utf8))])
        eventually("the front heard the leader") { pair.frontTransport.commands.count == 1 }

        pair.front.transportDidReceive([message(socket(1), 1), message(socket(1), 2)])
        eventually("the hub got both messages") { pair.hub.events.count == 3 }
        XCTAssertEqual(pair.frontTransport.processedEvents.filter(\.isMessage), [], "not handled before the hubs said so")

        pair.leader.processed([message(relayed(1), 1)])
        eventually("the first message reported handled") { pair.frontTransport.processedEvents.filter(\.isMessage).count == 1 }
        XCTAssertEqual(pair.frontTransport.processedEvents.filter(\.isMessage), [message(socket(1), 1)])
        pair.leader.processed([message(relayed(1), 2)])
        eventually("the second too") { pair.frontTransport.processedEvents.filter(\.isMessage).count == 2 }
        XCTAssertEqual(pair.frontTransport.processedEvents.filter(\.isMessage), [message(socket(1), 1), message(socket(1), 2)])
        await stop(pair)
    }

    /// A leader's handled counts wait for the next batch of commands to their node and go in
    /// it, rather than taking the bus just before the answer to the same message.
    func test_handledCountsRideOnTheNextCommandsToTheirNode() async {
        let pair = started(reportDelay: .seconds(3_600))
        pair.front.transportDidReceive([.opened(socket(1), upgrade)])
        eventually("the open reached the hub") { pair.hub.events.count == 1 }
        _ = pair.leader.submit([.send(relayed(1), Array("ready".utf8))])
        eventually("the front heard the leader") { pair.frontTransport.commands.count == 1 }
        pair.front.transportDidReceive([message(socket(1), 1)])
        eventually("the hub got the message") { pair.hub.events.count == 2 }
        let sentBefore = pair.network.sent.filter { $0.to == "F" }.count

        pair.leader.processed([message(relayed(1), 1)])
        XCTAssertEqual(pair.network.sent.filter { $0.to == "F" }.count, sentBefore, "the count waits")
        _ = pair.leader.submit([.send(relayed(1), Array("answer".utf8))])
        eventually("the answer and the count arrived") { pair.frontTransport.processedEvents.filter(\.isMessage) == [message(socket(1), 1)] }
        XCTAssertEqual(pair.frontTransport.commands.last, .send(socket(1), Array("answer".utf8)))
        let toFront = pair.network.sent.filter { $0.to == "F" }.dropFirst(sentBefore)
        XCTAssertEqual(toFront.count, 1, "one bus message carried both")
        let batch = try? TunnelBatch.decode(toFront.first?.message.body ?? "")
        XCTAssertEqual(batch?.handled, [socket(1): 1])
        XCTAssertEqual(batch?.commands, [.send(socket(1), Array("answer".utf8))])
        await stop(pair)
    }

    /// No turn renewed the front for nearly a lease (lease − min(lease/4, 500 ms)): at the next
    /// tick its sockets are closed 1012 and the leader told they closed; just before, nothing.
    func test_aFrontNotRenewedForNearlyALeaseCutsItsSocketsAtTheTick() async {
        let pair = started(lease: .seconds(2))
        pair.front.transportDidReceive([.opened(socket(1), upgrade), .opened(socket(2), upgrade)])
        eventually("both opens reached the hub") { pair.hub.events.count == 2 }

        pair.clock.advance(by: .milliseconds(1_499))
        pair.front.tick()
        XCTAssertEqual(pair.frontTransport.commands.filter(\.isClose), [], "1.499 s unrenewed: kept")
        pair.clock.advance(by: .milliseconds(1))
        pair.front.tick()
        let cut = "the leading node changed; reconnect"
        XCTAssertEqual(
            pair.frontTransport.commands.filter(\.isClose), [.close(socket(1), .serviceRestart, reason: cut), .close(socket(2), .serviceRestart, reason: cut)])
        eventually("the leader's hubs heard them closed") { pair.hub.events.count == 4 }
        XCTAssertEqual(Array(pair.hub.events.suffix(2)), [.closed(relayed(1)), .closed(relayed(2))])
        // It follows nobody until a turn renews it: new sockets get 1013.
        pair.front.transportDidReceive([.opened(socket(3), upgrade)])
        XCTAssertEqual(pair.frontTransport.commands.last, .close(socket(3), .tryAgainLater, reason: "no leading node is reachable"))
        // A turn renews it and reads the leader: it relays again.
        pair.front.follow(TunnelFront.Leader(node: "L", generation: 1))
        pair.front.transportDidReceive([.opened(socket(4), upgrade)])
        eventually("the new socket reached the hub") { pair.hub.events.count == 5 }
        await stop(pair)
    }

    /// With calls run on every node, the call sockets a front keeps are cut with its relayed
    /// ones (their calls and connections move to live nodes once its lease lapses): their
    /// closes still reach its call hub, and new call sockets are refused until it follows again.
    func test_aFrontNotRenewedCutsTheCallSocketsItKeepsAndRefusesNewOnes() async {
        let pair = started(lease: .seconds(2))
        let calls = Hub()
        pair.front.keepCallsLocal(path: "/v1/connect", hub: calls)
        pair.front.transportDidReceive([.opened(socket(1), upgrade), .opened(socket(2), upgrade)])
        XCTAssertEqual(calls.events, [.opened(socket(1), upgrade), .opened(socket(2), upgrade)])
        pair.clock.advance(by: .milliseconds(1_500))
        pair.front.tick()
        let cut = "this node lost its database; reconnect"
        XCTAssertEqual(
            pair.frontTransport.commands.filter(\.isClose), [.close(socket(1), .serviceRestart, reason: cut), .close(socket(2), .serviceRestart, reason: cut)])
        pair.front.transportDidReceive([.closed(socket(1)), .closed(socket(2)), .opened(socket(3), upgrade)])
        XCTAssertEqual(Array(calls.events.suffix(2)), [.closed(socket(1)), .closed(socket(2))], "the call hub hears them closed")
        XCTAssertEqual(pair.frontTransport.commands.last, .close(socket(3), .tryAgainLater, reason: "no leading node is reachable"))
        XCTAssertEqual(calls.events.count, 4, "the refused socket never reached the call hub")
        pair.front.follow(TunnelFront.Leader(node: "L", generation: 1))
        pair.front.transportDidReceive([.opened(socket(4), upgrade)])
        XCTAssertEqual(calls.events.last, .opened(socket(4), upgrade), "kept again once it follows")
        XCTAssertEqual(pair.hub.events, [], "no call socket went to the leader")
        await stop(pair)
    }

    /// A renewing turn that itself took nearly a lease counts as none: the node's lease may have
    /// lapsed meanwhile, so the front cuts its sockets rather than trusting it.
    func test_aTurnThatTookNearlyALeaseCutsTheSocketsToo() async {
        let pair = started(lease: .seconds(2))
        pair.front.transportDidReceive([.opened(socket(1), upgrade)])
        eventually("the open reached the hub") { pair.hub.events.count == 1 }
        let began = pair.clock.now()
        pair.clock.advance(by: .milliseconds(1_400))
        pair.front.follow(TunnelFront.Leader(node: "L", generation: 1), renewedAt: began)
        XCTAssertEqual(pair.frontTransport.commands.filter(\.isClose), [], "a turn of 1.4 s is fine")
        pair.clock.advance(by: .milliseconds(100))
        pair.front.follow(TunnelFront.Leader(node: "L", generation: 1), renewedAt: began)
        XCTAssertEqual(pair.frontTransport.commands.filter(\.isClose), [.close(socket(1), .serviceRestart, reason: "the leading node changed; reconnect")])
        eventually("the leader's hubs heard it closed") { pair.hub.events.last == .closed(relayed(1)) }
        await stop(pair)
    }

    /// Once a second a probe goes to the leader and back, timing the relay's round trip. (Each
    /// step is also a renewing turn, as the standby's loop makes every third of a lease.)
    func test_theProbeGoesOnceASecondAndItsRoundTripIsRecorded() async throws {
        let pair = started()
        func pings() -> Int { pair.network.sent.filter { $0.to == "L" && $0.message.body.contains("\"pi\"") }.count }
        func step(_ duration: Duration) {
            pair.clock.advance(by: duration)
            pair.front.follow(TunnelFront.Leader(node: "L", generation: 1))
            pair.front.tick()
        }
        pair.front.tick()
        XCTAssertEqual(pings(), 0, "not before a second")
        step(.seconds(1))
        pair.front.tick()
        eventually("one probe sent") { pings() == 1 }
        eventually("its answer timed") { (try? pair.metrics.expectTimer("switchboard_cluster_relay_round_trip_seconds").values.count) == 1 }
        step(.milliseconds(999))
        XCTAssertEqual(pings(), 1)
        step(.milliseconds(1))
        eventually("a second probe") { pings() == 2 }
        await stop(pair)
    }

    /// The front's listening connection lost: its sockets are cut (1012) and new ones refused
    /// (1013) until it listens again.
    func test_aLostListenerCutsTheSocketsAndRefusesNewOnesUntilItListensAgain() async {
        let pair = started()
        pair.front.transportDidReceive([.opened(socket(1), upgrade)])
        eventually("the open reached the hub") { pair.hub.events.count == 1 }
        pair.network.cutListening("F")
        eventually("the socket cut") { pair.frontTransport.commands.contains(.close(socket(1), .serviceRestart, reason: "the leading node changed; reconnect")) }
        eventually("the leader's hubs heard it closed") { pair.hub.events.last == .closed(relayed(1)) }
        pair.front.transportDidReceive([.opened(socket(2), upgrade)])
        XCTAssertEqual(pair.frontTransport.commands.last, .close(socket(2), .tryAgainLater, reason: "no leading node is reachable"))
        pair.network.restore("F")
        eventually("listening again") { pair.front.listening }
        pair.front.transportDidReceive([.opened(socket(3), upgrade)])
        eventually("a new socket relayed") { pair.hub.events.last.map { if case .opened = $0 { true } else { false } } == true }
        await stop(pair)
    }
}

extension ClusterTunnelTests {
    /// A batch to the front is lost: the leader drops the front's connections. The front's
    /// socket then speaks to a leader that holds nothing for it, and is closed (1012) so its
    /// client reconnects, instead of staying open with nothing behind it.
    func test_aSocketTheLeaderDroppedIsClosedOnceItSpeaks() async {
        let pair = started()
        pair.front.transportDidReceive([.opened(socket(1), upgrade)])
        eventually("the open reached the hub") { pair.hub.events.count == 1 }
        pair.network.refuseSends(from: "L")
        _ = pair.leader.submit([.send(relayed(1), Array("lost".utf8))])
        eventually("the leader dropped the front's connection") { pair.hub.events.last == .closed(relayed(1)) }
        XCTAssertEqual(try pair.metrics.expectCounter("switchboard_cluster_relay_failures_total").totalValue, 1)
        pair.network.refuseSends(from: "L", false)

        pair.front.transportDidReceive([.message(socket(1), Array("{}".utf8), isBinary: false)])
        eventually("the socket closed") { pair.frontTransport.commands.contains { $0.isClose } }
        XCTAssertEqual(pair.frontTransport.commands.filter(\.isClose), [.close(socket(1), .serviceRestart, reason: TunnelLeader.orphanedReason)])
        XCTAssertEqual(pair.hub.events.count, 2, "the message reached no hub")
        await stop(pair)
    }
}

extension TransportEvent {
    fileprivate var isMessage: Bool {
        if case .message = self { return true }
        return false
    }
}

extension OutboundCommand {
    fileprivate var isClose: Bool {
        if case .close = self { return true }
        return false
    }
}
