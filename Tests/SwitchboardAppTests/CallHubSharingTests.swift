import Foundation
import Logging
import SwitchboardCore
import SwitchboardTesting
import XCTest

@testable import SwitchboardApp

/// Calls run by several nodes (ADR 0012, step 3): hubs of two nodes on one store (the twins of
/// the store and of `call_owner`), each running the calls it claimed and sharing them: a
/// request for a call the other node runs is forwarded to it and answered through the client's
/// node; the owner's events reach the other node's clients. What one hub sends the other goes
/// through the bus's JSON.
final class CallHubSharingTests: XCTestCase {
    private let nodes = NodeHubs()
    private var base: InMemoryCallStore { nodes.base }
    private let hubs = HubDirectory()

    /// The hubs by node, for the `send` of each to reach the others.
    private final class HubDirectory: @unchecked Sendable {
        let lock = NSLock()
        var hubs: [String: CallHub] = [:]
        /// Batches sent, by destination (what a test may look at).
        var sent: [String: [CallForwardBatch]] = [:]
        func hub(_ node: String) -> CallHub? { lock.withLock { hubs[node] } }
    }

    private struct Node {
        let id: String
        let hub: CallHub
        let transport: InMemoryTransport
        let ownership: InMemoryCallOwnership
    }

    private func node(_ id: String, placement: FixedPlacement = FixedPlacement()) throws -> Node {
        let (hub, transport, ownership) = nodes.hub(id, placement: placement)
        let hubs = self.hubs
        hub.shareCalls(
            peers: { hubs.lock.withLock { hubs.hubs.keys.filter { $0 != id }.sorted() } },
            send: { batches in
                for (destination, batch) in batches {
                    hubs.lock.withLock { hubs.sent[destination, default: []].append(batch) }
                    guard let read = CallForwardBatch.read(batch.json()) else { return XCTFail("a batch that does not read back") }
                    hubs.hub(destination)?.forwardArrived(read, from: id)
                }
            })
        try hub.start(transport: transport)
        hubs.lock.withLock { hubs.hubs[id] = hub }
        return Node(id: id, hub: hub, transport: transport, ownership: ownership)
    }

    /// Lets every hop between the hubs run: each round waits for both queues.
    private func settle(_ nodes: Node...) { settle(nodes) }

    private func connect(_ node: Node, _ user: String) -> ConnectionID { nodes.connect(node.hub, node.transport, user) }

    /// Sends one frame; the frames each node's transport got after everything settled.
    private func send(_ node: Node, _ socket: ConnectionID, _ text: String, settling nodes: Node...) {
        node.hub.queue.sync { node.hub.receive([.message(socket, Array(text.utf8), isBinary: false)]) }
        settle(nodes.isEmpty ? [node] : nodes)
    }

    private func settle(_ nodes: [Node]) {
        for _ in 0..<4 { for node in nodes { node.hub.queue.sync {} } }
    }

    /// The frames `socket` got since the last drain of `node`'s transport, parsed.
    private func frames(_ node: Node, _ socket: ConnectionID) -> [[String: Any]] {
        node.transport.drain().compactMap { command -> [String: Any]? in
            guard case .send(let target, let bytes) = command, target == socket else { return nil }
            return try? JSONSerialization.jsonObject(with: Data(bytes)) as? [String: Any]
        }
    }

    private let standup = CallCID(type: "default", id: "standup")!

    func test_aClientOfAnotherNodeJoinsACallThroughItsOwnerAndBothHearEachOther() throws {
        let a = try node("node-a"), b = try node("node-b")
        let bob = connect(a, "bob"), alice = connect(b, "alice")
        send(a, bob, #"{"id":1,"type":"call.join","data":{"type":"default","id":"standup","create":true}}"#)
        XCTAssertEqual(frames(a, bob).first?["type"] as? String, "response")
        XCTAssertEqual(a.hub.claimedCalls, [standup])

        send(b, alice, #"{"id":2,"type":"call.join","data":{"type":"default","id":"standup"}}"#, settling: b, a)
        let answer = try XCTUnwrap(frames(b, alice).first { $0["id"] as? Int == 2 })
        XCTAssertEqual(answer["type"] as? String, "response", "\(answer)")
        let session = try XCTUnwrap((answer["data"] as? [String: Any])?["session_id"] as? String)
        XCTAssertEqual(b.hub.claimedCalls, [], "the client's node claims nothing")
        XCTAssertEqual(try base.loadLiveState().sessions.first { $0.sessionID.rawValue == session }?.userID.rawValue, "alice", "the owner wrote it")
        let joined = frames(a, bob).filter { $0["type"] as? String == "call.participant_joined" }
        XCTAssertEqual(joined.count, 1, "bob, on the owner, hears alice join")

        // Bob's event reaches alice on the other node.
        send(a, bob, #"{"id":3,"type":"call.send_event","data":{"type":"default","id":"standup","custom":{"x":1}}}"#, settling: a, b)
        let custom = frames(b, alice).filter { $0["type"] as? String == "call.custom" }
        XCTAssertEqual(custom.count, 1)
        XCTAssertEqual(custom.first?["call_cid"] as? String, "default:standup")
        XCTAssertEqual(hubs.lock.withLock { hubs.sent["node-a"]?.flatMap(\.requests).count }, 1, "one request forwarded")
    }

    /// The admin API's detail of a live call another node runs names the SFU the store holds
    /// for it (the placement); of a call run here, the engine's; of an ended call, none.
    func test_theDetailOfACallAnotherNodeRunsNamesItsPlacement() throws {
        let elsewhere = SFUAssignment(id: "sfu-2", url: "wss://sfu-2.example", region: "eu")
        let a = try node("node-a"), b = try node("node-b", placement: FixedPlacement(placed: [standup: elsewhere]))
        let bob = connect(a, "bob")
        send(a, bob, #"{"id":1,"type":"call.join","data":{"type":"default","id":"standup","create":true}}"#)
        XCTAssertEqual(a.hub.claimedCalls, [standup])
        XCTAssertEqual(try XCTUnwrap(try b.hub.callDetail(standup, eventLimit: 0)).sfu, elsewhere, "node-a's call: its placement")
        XCTAssertNil(try XCTUnwrap(try a.hub.callDetail(standup, eventLimit: 0)).sfu, "its own call: the engine's (peer-to-peer)")
        try a.hub.endCall(standup)
        settle(a, b)
        XCTAssertNil(try XCTUnwrap(try b.hub.callDetail(standup, eventLimit: 0)).sfu, "ended: none")
    }

    /// The admin API's end and kick of a call another node runs are made by that node, as its
    /// own admin API makes them; its refusals come back with their codes.
    func test_anAdminEndAndKickOfACallTheOtherNodeRunsAreMadeByItsOwner() throws {
        let a = try node("node-a"), b = try node("node-b")
        let alice = connect(b, "alice"), carol = connect(b, "carol")
        send(b, alice, #"{"id":1,"type":"call.join","data":{"type":"default","id":"standup","create":true}}"#)
        send(b, carol, #"{"id":2,"type":"call.join","data":{"type":"default","id":"standup"}}"#)
        let carolSession = try XCTUnwrap(try base.loadLiveState().sessions.first { $0.userID.rawValue == "carol" }).sessionID
        _ = b.transport.drain()

        try a.hub.removeSession(carolSession, from: standup)
        settle(a, b)
        let kicked = try XCTUnwrap(base.callDetail(standup, eventLimit: 0)?.sessions.first { $0.sessionID == carolSession })
        XCTAssertEqual(kicked.leftReason, "kicked")
        XCTAssertTrue(frames(b, alice).contains { $0["type"] as? String == "call.participant_left" }, "the owner's clients hear it")
        XCTAssertThrowsError(try a.hub.removeSession(carolSession, from: standup)) {
            XCTAssertEqual(($0 as? SwitchboardError)?.code, .sessionNotFound, "\($0)")
        }

        try a.hub.endCall(standup)
        settle(a, b)
        XCTAssertNotNil(try base.loadCall(standup)?.call.endedAt)
        XCTAssertTrue(frames(b, alice).contains { $0["type"] as? String == "call.ended" })
        XCTAssertEqual(a.hub.claimedCalls, [], "node-a never ran it")
        XCTAssertEqual(b.hub.claimedCalls, [standup])
        XCTAssertEqual(hubs.lock.withLock { hubs.sent["node-b"]?.flatMap(\.adminRequests).count }, 3)
    }

    /// An owner that does not answer: the admin change is `unavailable`, naming it, after the wait.
    func test_anAdminChangeWhoseOwnerDoesNotAnswerIsUnavailableNamingIt() throws {
        let a = try node("node-a"), b = try node("node-b")
        let alice = connect(b, "alice")
        send(b, alice, #"{"id":1,"type":"call.join","data":{"type":"default","id":"standup","create":true}}"#)
        hubs.lock.withLock { hubs.hubs["node-b"] = nil }  // its batches go nowhere now
        a.hub.forwardedAdmin.timeout = .milliseconds(50)
        XCTAssertThrowsError(try a.hub.endCall(standup)) { error in
            XCTAssertEqual((error as? SwitchboardError)?.code, .unavailable)
            XCTAssertTrue("\(error)".contains("node-b"), "\(error)")
        }
        XCTAssertNil(try base.loadCall(standup)?.call.endedAt)
    }

    func test_aRingCrossesNodesAndTheAcceptGoesToTheOwner() throws {
        let a = try node("node-a"), b = try node("node-b")
        let alice = connect(a, "alice"), carol = connect(b, "carol")
        send(a, alice, #"{"id":1,"type":"call.join","data":{"type":"ringing","id":"r","create":true,"members":["carol"],"ring":true}}"#, settling: a, b)
        let ring = try XCTUnwrap(frames(b, carol).first { $0["type"] as? String == "call.ring" })
        XCTAssertEqual(ring["call_cid"] as? String, "ringing:r")

        send(b, carol, #"{"id":2,"type":"call.accept","data":{"type":"ringing","id":"r"}}"#, settling: b, a)
        let accepted = try XCTUnwrap(frames(b, carol).first { $0["id"] as? Int == 2 })
        XCTAssertEqual(accepted["type"] as? String, "response", "\(accepted)")
        XCTAssertEqual(try base.loadCall(CallCID(type: "ringing", id: "r")!)?.members.first { $0.userID.rawValue == "carol" }?.ringState, .accepted)
        XCTAssertTrue(frames(a, alice).contains { $0["type"] as? String == "call.accepted" }, "the caller on the owner hears it")
    }

    func test_aForwardedRequestWhoseCommitFailsIsAnsweredUnavailable() throws {
        let a = try node("node-a"), b = try node("node-b")
        let bob = connect(a, "bob"), alice = connect(b, "alice")
        send(a, bob, #"{"id":1,"type":"call.join","data":{"type":"default","id":"standup","create":true}}"#)
        base.failNextApply = true
        send(b, alice, #"{"id":2,"type":"call.join","data":{"type":"default","id":"standup"}}"#, settling: b, a)
        let answer = try XCTUnwrap(frames(b, alice).first { $0["id"] as? Int == 2 })
        XCTAssertEqual((answer["error"] as? [String: Any])?["code"] as? String, "unavailable", "\(answer)")
        XCTAssertEqual(try base.loadLiveState().sessions.count, 1, "only bob's session")
    }

    func test_aRequestSentToANodeThatDoesNotRunTheCallIsRefusedNamingTheOwnerNotSentOn() throws {
        let a = try node("node-a"), b = try node("node-b")
        let bob = connect(a, "bob")
        send(a, bob, #"{"id":1,"type":"call.join","data":{"type":"default","id":"standup","create":true}}"#)
        // A request b believes a runs... sent to b itself by a third node with a stale view.
        let request = ForwardedCallRequest(
            ticket: "t-1", cid: standup, owner: CallOwner(node: "node-b", generation: 1),
            actor: CallActor(user: UserID("zed")!, connection: ClientConnectionID("z-1")), remoteAddress: "",
            frame: JSONValue.parse(Array(#"{"id":9,"type":"call.get","data":{"type":"default","id":"standup"}}"#.utf8))!)
        hubs.lock.withLock { hubs.hubs["node-c"] = nil }
        b.hub.forwardArrived(CallForwardBatch(requests: [request]), from: "node-c")
        settle(b, a)
        let answers = hubs.lock.withLock { hubs.sent["node-c"]?.flatMap(\.answers) ?? [] }
        XCTAssertEqual(answers.count, 1)
        guard case .failure(let error)? = answers.first?.result else { return XCTFail("\(answers)") }
        XCTAssertEqual(error.code, .unavailable)
        XCTAssertTrue(error.message.contains("node node-a"), error.message)
        XCTAssertNil(hubs.lock.withLock { hubs.sent["node-a"] }, "nothing sent on to the owner")
    }

    /// The ring's node reads the rung users from the store: carol, in a call the other node
    /// runs, is busy (the ringing type rejects busy callees), though this node holds none of it.
    func test_aUserInACallOfAnotherNodeIsBusyForARingHere() throws {
        let a = try node("node-a"), b = try node("node-b")
        let alice = connect(a, "alice"), carol = connect(b, "carol")
        send(b, carol, #"{"id":1,"type":"call.join","data":{"type":"default","id":"elsewhere","create":true}}"#)
        XCTAssertEqual(frames(b, carol).first?["type"] as? String, "response")

        send(a, alice, #"{"id":2,"type":"call.join","data":{"type":"ringing","id":"r","create":true,"members":["carol"],"ring":true}}"#, settling: a, b)
        XCTAssertEqual(try base.loadCall(CallCID(type: "ringing", id: "r")!)?.members.first { $0.userID.rawValue == "carol" }?.ringState, .rejected)
        XCTAssertFalse(frames(b, carol).contains { $0["type"] as? String == "call.ring" }, "she is not rung")
    }

    /// A device that connects to another node than the ringing call's gets its `call.ring`,
    /// read from the store, and its accept goes to the call's node.
    func test_aDeviceConnectingToAnotherNodeGetsTheRingsOfCallsRunElsewhere() throws {
        let a = try node("node-a"), b = try node("node-b")
        let alice = connect(a, "alice")
        send(a, alice, #"{"id":1,"type":"call.join","data":{"type":"ringing","id":"r","create":true,"members":["carol"],"ring":true}}"#, settling: a, b)

        let socket = ConnectionID(thread: 0, serial: 999)
        b.hub.queue.sync { b.hub.receive([.opened(socket, WebSocketUpgrade(path: "/v1/connect", query: ["token": "carol"]))]) }
        _ = b.transport.waitForCommands(count: 2)
        let frames = frames(b, socket)
        XCTAssertEqual(frames.first?["type"] as? String, "connection.ok")
        let ring = try XCTUnwrap(frames.first { $0["type"] as? String == "call.ring" }, "\(frames)")
        XCTAssertEqual(ring["call_cid"] as? String, "ringing:r")
        XCTAssertEqual(((ring["data"] as? [String: Any])?["call"] as? [String: Any])?["cid"] as? String, "ringing:r")
        XCTAssertFalse(b.hub.withGateway { $0.holds(CallCID(type: "ringing", id: "r")!) }, "read, not claimed nor kept")
    }
}
