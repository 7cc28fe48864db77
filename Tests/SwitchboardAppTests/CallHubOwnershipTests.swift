import Foundation
import Logging
import SwitchboardApp
import SwitchboardCore
import SwitchboardTesting
import XCTest

/// Calls owned per node (ADR 0012): hubs of two nodes on one store, each running only the calls
/// it claimed (the in-memory twins of the store and of `call_owner`).
final class CallHubOwnershipTests: XCTestCase {
    private let nodes = NodeHubs()
    private var base: InMemoryCallStore { nodes.base }
    private var table: InMemoryCallOwnership.Table { nodes.table }
    private var clock: ManualWallClock { nodes.clock }

    private struct Node {
        let hub: CallHub
        let transport: InMemoryTransport
        let ownership: InMemoryCallOwnership
    }

    private func node(_ id: String, wait: Duration = .zero, claimingAtStart: Bool = true) throws -> Node {
        let (hub, transport, ownership) = nodes.hub(id, wait: wait, claimingAtStart: claimingAtStart)
        try hub.start(transport: transport)
        return Node(hub: hub, transport: transport, ownership: ownership)
    }

    private func connect(_ node: Node, _ user: String) -> ConnectionID { nodes.connect(node.hub, node.transport, user) }

    /// Sends one request and returns the frame answering it.
    private func request(_ node: Node, _ socket: ConnectionID, _ text: String, line: UInt = #line) throws -> [String: Any] {
        node.hub.queue.sync { node.hub.receive([.message(socket, Array(text.utf8), isBinary: false)]) }
        let frames = node.transport.drain().compactMap { command -> [String: Any]? in
            guard case .send(let target, let bytes) = command, target == socket else { return nil }
            return try? JSONSerialization.jsonObject(with: Data(bytes)) as? [String: Any]
        }
        return try XCTUnwrap(frames.first { $0["type"] as? String == "response" || $0["type"] as? String == "error" }, "no answer to \(text)", line: line)
    }

    private func code(_ frame: [String: Any]) -> String? { (frame["error"] as? [String: Any])?["code"] as? String }
    private func message(_ frame: [String: Any]) -> String { (frame["error"] as? [String: Any])?["message"] as? String ?? "" }

    private let r = CallCID(type: "ringing", id: "r")!

    /// A node claims the call its client creates; a client of another live node asking for it
    /// is refused `unavailable`, naming the node that runs it, and nothing of its is written.
    func test_aCallAnotherLiveNodeRunsIsRefusedNamingIt() throws {
        let a = try node("node-a"), b = try node("node-b")
        let alice = connect(a, "alice"), bob = connect(b, "bob")
        let created = try request(a, alice, #"{"id":1,"type":"call.join","data":{"type":"ringing","id":"r","create":true,"members":["bob"],"ring":true}}"#)
        XCTAssertEqual(created["type"] as? String, "response")
        XCTAssertEqual(a.hub.claimedCalls, [r])
        XCTAssertEqual(try a.ownership.owners(of: [r]), [r: CallOwner(node: "node-a", generation: 1)])
        let commits = base.applyCount

        let refused = try request(b, bob, #"{"id":2,"type":"call.accept","data":{"type":"ringing","id":"r"}}"#)
        XCTAssertEqual(code(refused), "unavailable")
        XCTAssertTrue(message(refused).contains("node node-a (generation 1)"), message(refused))
        XCTAssertEqual(b.hub.claimedCalls, [])
        XCTAssertFalse(b.hub.withGateway { $0.holds(CallCID(type: "ringing", id: "r")!) }, "not loaded")
        XCTAssertEqual(base.applyCount, commits)
        XCTAssertEqual(try base.loadCall(r)?.members.first { $0.userID.rawValue == "bob" }?.ringState, .ringing)

        let other = try request(b, bob, #"{"id":3,"type":"call.join","data":{"type":"default","id":"own","create":true}}"#)
        XCTAssertEqual(other["type"] as? String, "response", "its own calls run")
        XCTAssertEqual(b.hub.claimedCalls, [CallCID(type: "default", id: "own")!])
    }

    /// Once the owner's lease lapsed, the next request for its call claims it with the next
    /// generation and loads it as the owner left it (members ringing, sessions joined); the
    /// old owner's writes to it are refused and store nothing.
    func test_aLapsedNodesCallIsTakenOverByTheNextRequestAndTheOldOwnerWritesNothingMore() throws {
        let a = try node("node-a"), b = try node("node-b")
        let alice = connect(a, "alice"), bob = connect(b, "bob")
        _ = try request(a, alice, #"{"id":1,"type":"call.join","data":{"type":"ringing","id":"r","create":true,"members":["bob"],"ring":true}}"#)
        table.lapse("node-a")

        let accepted = try request(b, bob, #"{"id":2,"type":"call.accept","data":{"type":"ringing","id":"r"}}"#)
        XCTAssertEqual(accepted["type"] as? String, "response", "\(accepted)")
        XCTAssertEqual(try b.ownership.owners(of: [r]), [r: CallOwner(node: "node-b", generation: 2)])
        let taken = try XCTUnwrap(b.hub.withGateway { $0.engine.call(CallCID(type: "ringing", id: "r")!) })
        XCTAssertEqual(taken.sessions.values.map(\.userID.rawValue), ["alice"], "alice's session came with the call")
        XCTAssertEqual(taken.members[UserID("bob")!]?.ringState, .accepted)

        let commits = base.applyCount
        let stale = try request(a, alice, #"{"id":3,"type":"call.leave","data":{"type":"ringing","id":"r"}}"#)
        XCTAssertEqual(code(stale), "unavailable")
        XCTAssertEqual(base.applyCount, commits, "the old owner wrote nothing")
        XCTAssertEqual(try base.loadLiveState().sessions.map(\.userID.rawValue), ["alice"])
        XCTAssertFalse(a.hub.claimedCalls.contains(r), "the rollback forgot the lost call")
        XCTAssertNil(a.hub.withGateway { $0.engine.call(CallCID(type: "ringing", id: "r")!) }, "and it left memory")
    }

    /// A hub that claims nothing at start leaves a dead node's live call alone until its
    /// sweep adopts it or a client asks for it.
    func test_aStartThatClaimsNothingLeavesTheLiveCallsToRequestsAndTheSweep() throws {
        let a = try node("node-a")
        let alice = connect(a, "alice")
        _ = try request(a, alice, #"{"id":1,"type":"call.join","data":{"type":"ringing","id":"r","create":true,"members":["bob"],"ring":true}}"#)
        table.lapse("node-a")

        let b = try node("node-b", claimingAtStart: false)
        XCTAssertEqual(b.hub.claimedCalls, [])
        XCTAssertNil(b.hub.withGateway { $0.engine.call(CallCID(type: "ringing", id: "r")!) })
        XCTAssertEqual(try b.ownership.owners(of: [r]), [r: CallOwner(node: "node-a", generation: 1)])
        for _ in 0..<CallHub.releaseEveryTicks { b.hub.tickNow() }
        XCTAssertEqual(b.hub.claimedCalls, [r], "the sweep adopted it")
        XCTAssertEqual(b.hub.withGateway { $0.engine.call(CallCID(type: "ringing", id: "r")!)?.sessions.count }, 1)
    }

    /// A dead node's ringing call that no client asks about is adopted by another node's sweep,
    /// and its ring still times out there, once.
    func test_aDeadNodesCallNobodyAsksForIsAdoptedAndItsRingTimesOut() throws {
        let a = try node("node-a"), b = try node("node-b")
        let alice = connect(a, "alice")
        _ = try request(a, alice, #"{"id":1,"type":"call.join","data":{"type":"ringing","id":"r","create":true,"members":["bob"],"ring":true}}"#)
        for _ in 0..<CallHub.releaseEveryTicks { b.hub.tickNow() }
        XCTAssertEqual(b.hub.claimedCalls, [], "node-a lives: its call stays with it")

        table.lapse("node-a")
        for _ in 0..<CallHub.releaseEveryTicks { b.hub.tickNow() }
        XCTAssertEqual(b.hub.claimedCalls, [r])
        XCTAssertEqual(try b.ownership.owners(of: [r]), [r: CallOwner(node: "node-b", generation: 2)])
        XCTAssertEqual(try base.loadCall(r)?.members.first { $0.userID.rawValue == "bob" }?.ringState, .ringing)

        clock.advance(by: .seconds(31))
        b.hub.tickNow()
        let bob = try XCTUnwrap(try base.loadCall(r)?.members.first { $0.userID.rawValue == "bob" })
        XCTAssertEqual(bob.ringState, .missed, "the ring timed out on the adopting node")
        XCTAssertEqual(try base.loadLiveState().calls.map(\.cid), [], "nobody answered: the call ended")
    }

    /// A start claims the live calls nobody else runs and leaves those a live node holds (its
    /// wait over); once that node's lease lapses, a request takes its call over.
    func test_aStartRunsTheLiveCallsItCouldClaim() throws {
        let a = try node("node-a")
        let alice = connect(a, "alice")
        _ = try request(a, alice, #"{"id":1,"type":"call.join","data":{"type":"default","id":"kept","create":true}}"#)
        let first = try node("node-first")
        let carol = connect(first, "carol")
        _ = try request(first, carol, #"{"id":2,"type":"call.join","data":{"type":"default","id":"free","create":true}}"#)
        table.lapse("node-first")

        let c = try node("node-c")
        XCTAssertEqual(c.hub.claimedCalls, [CallCID(type: "default", id: "free")!])
        XCTAssertEqual(c.hub.withGateway { $0.engine.call(CallCID(type: "default", id: "free")!)?.sessions.count }, 1)
        XCTAssertNil(c.hub.withGateway { $0.engine.call(CallCID(type: "default", id: "kept")!) })
        let dave = connect(c, "dave")
        XCTAssertEqual(code(try request(c, dave, #"{"id":3,"type":"call.join","data":{"type":"default","id":"kept"}}"#)), "unavailable")
        table.lapse("node-a")
        let joined = try request(c, dave, #"{"id":4,"type":"call.join","data":{"type":"default","id":"kept"}}"#)
        XCTAssertEqual(joined["type"] as? String, "response")
        XCTAssertEqual(c.hub.withGateway { $0.engine.call(CallCID(type: "default", id: "kept")!)?.sessions.count }, 2, "alice's and dave's")
    }

    /// A call that ended and left memory is given up: another node then claims it anew.
    func test_aCallThatLeftMemoryIsGivenUp() throws {
        let a = try node("node-a"), b = try node("node-b")
        let alice = connect(a, "alice")
        _ = try request(a, alice, #"{"id":1,"type":"call.join","data":{"type":"default","id":"short","create":true}}"#)
        _ = try request(a, alice, #"{"id":2,"type":"call.end","data":{"type":"default","id":"short"}}"#)
        let short = CallCID(type: "default", id: "short")!
        for _ in 0..<CallHub.releaseEveryTicks { a.hub.tickNow() }
        XCTAssertEqual(a.hub.claimedCalls, [short], "ended, still in memory for a quick reopening")
        clock.advance(by: .seconds(CallEngine.endedRetention + 1))
        for _ in 0..<CallHub.releaseEveryTicks { a.hub.tickNow() }
        XCTAssertEqual(a.hub.claimedCalls, [])
        XCTAssertEqual(try a.ownership.owners(of: [short]), [:])
        let bob = connect(b, "bob")
        let reopened = try request(b, bob, #"{"id":3,"type":"call.join","data":{"type":"default","id":"short"}}"#)
        XCTAssertEqual(reopened["type"] as? String, "response", "\(reopened)")
        XCTAssertEqual(try b.ownership.owners(of: [short]), [short: CallOwner(node: "node-b", generation: 1)])
    }
}
