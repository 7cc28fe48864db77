import Foundation
import MetricsTestKit
import SwitchboardApp
import SwitchboardCore
import SwitchboardTesting
import XCTest

/// Client connections between nodes (ADR 0012, step 3): hubs of two nodes on the twins of the
/// store and `call_owner`. A connection is its node's; a client resumes on another node, which
/// takes it over from the store; the node running a call ends the sessions of connections no
/// live node holds once their resume window passed.
final class CallHubConnectionsTests: XCTestCase {
    private let metrics = TestMetrics()
    private lazy var nodes: NodeHubs = {
        let nodes = NodeHubs()
        nodes.configuration.resumeWindow = .seconds(30)
        nodes.metricsFactory = metrics
        return nodes
    }()
    private var serial = 1000
    private let standup = CallCID(type: "default", id: "standup")!

    private struct Node {
        let hub: CallHub
        let transport: InMemoryTransport
    }

    /// The hubs started here, by node: each shares calls with the others.
    private final class Started: @unchecked Sendable {
        let lock = NSLock()
        var hubs: [String: CallHub] = [:]
    }
    private let started = Started()

    private func node(_ id: String) throws -> Node {
        let (hub, transport, _) = nodes.hub(id)
        let started = self.started
        hub.shareCalls(
            peers: { started.lock.withLock { started.hubs.keys.filter { $0 != id }.sorted() } },
            send: { batches in
                for (destination, batch) in batches { started.lock.withLock { started.hubs[destination] }?.forwardArrived(batch, from: id) }
            })
        try hub.start(transport: transport)
        started.lock.withLock { started.hubs[id] = hub }
        return Node(hub: hub, transport: transport)
    }

    /// Opens a socket of `user` (resuming `resume`, if given) and returns it with its
    /// `connection.ok`'s data.
    private func open(_ node: Node, _ user: String, resume: String? = nil, line: UInt = #line) throws -> (ConnectionID, [String: Any]) {
        serial += 1
        let socket = ConnectionID(thread: 0, serial: UInt64(serial))
        var query = ["token": user]
        if let resume { query["resume_token"] = resume }
        let before = node.transport.commands.count
        node.hub.queue.sync { node.hub.receive([.opened(socket, WebSocketUpgrade(path: "/v1/connect", query: query))]) }
        let commands = node.transport.waitForCommands(count: before + 1)
        let ok = commands.dropFirst(before).compactMap { command -> [String: Any]? in
            guard case .send(socket, let bytes) = command else { return nil }
            return try? JSONSerialization.jsonObject(with: Data(bytes)) as? [String: Any]
        }.first { $0["type"] as? String == "connection.ok" }
        return (socket, try XCTUnwrap(ok?["data"] as? [String: Any], "no connection.ok", line: line))
    }

    private func send(_ node: Node, _ socket: ConnectionID, _ text: String) {
        node.hub.queue.sync { node.hub.receive([.message(socket, Array(text.utf8), isBinary: false)]) }
    }

    private func settle(_ all: Node...) {
        for _ in 0..<4 { for node in all { node.hub.queue.sync {} } }
    }

    private func sessions() throws -> [String: SessionRecord] {
        Dictionary(uniqueKeysWithValues: try nodes.base.loadLiveState().sessions.map { ($0.userID.rawValue, $0) })
    }

    /// The sweep runs every ``CallHub/releaseEveryTicks`` ticks.
    private func sweep(_ node: Node) {
        for _ in 0..<CallHub.releaseEveryTicks { node.hub.tickNow() }
    }

    func test_aClientOfADeadNodeResumesOnAnotherAndTheOthersSessionsEndOnceTheWindowPassed() throws {
        let a = try node("node-a")
        let (alice, aliceOK) = try open(a, "alice")
        let (carol, _) = try open(a, "carol")
        send(a, alice, #"{"id":1,"type":"call.join","data":{"type":"default","id":"standup","create":true}}"#)
        send(a, carol, #"{"id":2,"type":"call.join","data":{"type":"default","id":"standup"}}"#)
        XCTAssertEqual(try sessions().keys.sorted(), ["alice", "carol"])
        XCTAssertEqual(try nodes.base.loadLiveState().connections.map(\.node), ["node-a", "node-a"], "stamped with their node")
        nodes.table.lapse("node-a")

        // Node b starts: it takes the call over, not a's connections; their sessions stay.
        let b = try node("node-b")
        XCTAssertEqual(b.hub.claimedCalls, [standup])
        XCTAssertEqual(b.hub.withGateway { $0.clients.count }, 0)
        let standup = self.standup
        XCTAssertEqual(b.hub.withGateway { $0.engine.call(standup)?.sessions.count }, 2)

        let (resumed, ok) = try open(b, "alice", resume: aliceOK["resume_token"] as? String)
        XCTAssertEqual(ok["resumed"] as? Bool, true)
        XCTAssertEqual(ok["replay_complete"] as? Bool, false, "the events a's buffer held are gone")
        XCTAssertEqual(ok["connection_id"] as? String, aliceOK["connection_id"] as? String)
        XCTAssertEqual(ok["sessions"] as? [String], [try XCTUnwrap(sessions()["alice"]).sessionID.rawValue])
        XCTAssertEqual(try nodes.base.loadLiveState().connections.first { $0.userID.rawValue == "alice" }?.node, "node-b")
        XCTAssertEqual(try metrics.expectCounter("switchboard_connection_takeovers_total").totalValue, 1)
        _ = resumed

        // Within the window nothing leaves; after it, carol's session does, and her row goes.
        sweep(b)
        XCTAssertEqual(try sessions().keys.sorted(), ["alice", "carol"])
        nodes.clock.advance(by: .seconds(30))
        sweep(b)
        XCTAssertEqual(try sessions().keys.sorted(), ["alice"])
        let left = try XCTUnwrap(nodes.base.callDetail(standup, eventLimit: 0)?.sessions.first { $0.userID.rawValue == "carol" })
        XCTAssertEqual(left.leftReason, "connection_lost")
        XCTAssertEqual(try nodes.base.loadLiveState().connections.map(\.userID.rawValue), ["alice"])
        XCTAssertEqual(try metrics.expectCounter("switchboard_connections_orphaned_total").totalValue, 1)
        _ = carol
    }

    func test_aClientThatResumesOnAnotherLiveNodeMovesThereAndStillHearsItsCall() throws {
        let a = try node("node-a"), b = try node("node-b")
        let (alice, aliceOK) = try open(a, "alice")
        let (bob, _) = try open(a, "bob")
        send(a, alice, #"{"id":1,"type":"call.join","data":{"type":"default","id":"standup","create":true}}"#)
        send(a, bob, #"{"id":2,"type":"call.join","data":{"type":"default","id":"standup"}}"#)
        _ = a.transport.drain()

        let (moved, ok) = try open(b, "alice", resume: aliceOK["resume_token"] as? String)
        settle(b, a)
        XCTAssertEqual(ok["resumed"] as? Bool, true)
        XCTAssertTrue(a.transport.drain().contains(.close(alice, .replaced, reason: "resumed on another node")), "a let her go")
        let aliceConnection = ClientConnectionID(try XCTUnwrap(aliceOK["connection_id"] as? String))
        XCTAssertNil(a.hub.withGateway { $0.clients[aliceConnection] })
        XCTAssertEqual(try sessions().keys.sorted(), ["alice", "bob"], "her session stays")

        _ = b.transport.drain()
        send(a, bob, #"{"id":3,"type":"call.send_event","data":{"type":"default","id":"standup","custom":{"x":1}}}"#)
        settle(a, b)
        let events = b.transport.drain().compactMap { command -> String? in
            guard case .send(moved, let bytes) = command else { return nil }
            return (try? JSONSerialization.jsonObject(with: Data(bytes)) as? [String: Any])?["type"] as? String
        }
        XCTAssertEqual(events, ["call.custom"], "the call's node still reaches her, now through b")

        // Both nodes live: the sweep ends nothing.
        sweep(a)
        XCTAssertEqual(try sessions().keys.sorted(), ["alice", "bob"])
    }
}
