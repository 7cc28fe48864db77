import Foundation
import SwitchboardCore
import XCTest

/// Calls run by several nodes (ADR 0012, step 3), two gateways standing for two nodes: `a` runs
/// the calls, `b` holds some clients' sockets. What one puts out for the other goes through
/// the bus's JSON (``CallForwardBatch/json()`` and ``CallForwardBatch/read(_:)``).
final class CallForwardingTests: XCTestCase {
    private let standup = CallFixture.cid("default", "standup")
    private let ownerA = CallOwner(node: "node-a", generation: 3)

    /// Two nodes; both share calls.
    private struct Nodes {
        var a = GatewayHarness(CallFixture.configuration(), idPrefix: "a")
        var b = GatewayHarness(CallFixture.configuration(), idPrefix: "b")

        init() {
            a.gateway.sharesCalls = true
            b.gateway.sharesCalls = true
        }

        /// Carries what `from` put out in its last step to the other node, through the wire;
        /// the receiver's `last` holds what it did (requests run, answers, events).
        mutating func carry(from: String, file: StaticString = #filePath, line: UInt = #line) {
            let output = from == "node-a" ? a.last : b.last
            let to = from == "node-a" ? "node-b" : "node-a"
            let batches = output.forwardBatches(to: [to])
            XCTAssertEqual(Set(batches.keys).subtracting([to]), [], "nothing for nodes other than \(to)", file: file, line: line)
            guard let sent = batches[to] else { return }
            guard let batch = CallForwardBatch.read(sent.json()) else {
                XCTFail("the batch does not read back", file: file, line: line)
                return
            }
            XCTAssertEqual(batch, sent, "the wire keeps the batch", file: file, line: line)
            if to == "node-a" { Self.apply(batch, from: from, to: &a) } else { Self.apply(batch, from: from, to: &b) }
        }

        private static func apply(_ batch: CallForwardBatch, from: String, to node: inout GatewayHarness) {
            node.last = CallGatewayOutput()
            for answer in batch.answers { node.gateway.answerArrived(answer, into: &node.last) }
            node.gateway.noticesArrived(batch.notices, into: &node.last)
            if !batch.lostConnections.isEmpty { node.gateway.connectionsLostElsewhere(batch.lostConnections, now: node.now, into: &node.last) }
            for request in batch.requests {
                node.gateway.runForwarded(request, from: from, placer: node.placer, newID: node.ids.next, now: node.now, into: &node.last)
            }
        }
    }

    /// Bob, on `a`, creates and joins the standup; alice, on `b`, joins it through `a`.
    private func bobOnAAndAliceThroughB(_ nodes: inout Nodes) throws -> (bob: Device, alice: Device) {
        let bob = try XCTUnwrap(nodes.a.connect("bob"))
        nodes.a.request(bob.socket, "j", "call.join", #"{"type":"default","id":"standup","create":true}"#)
        let alice = try XCTUnwrap(nodes.b.connect("alice"))
        nodes.b.gateway.forward([standup: ownerA])
        nodes.b.request(alice.socket, "j1", "call.join", #"{"type":"default","id":"standup"}"#)
        nodes.carry(from: "node-b")
        nodes.carry(from: "node-a")
        return (bob, alice)
    }

    // MARK: Requests

    func test_aRequestForACallRunElsewhereIsAnsweredByItsOwnerThroughTheClientsNode() throws {
        var nodes = Nodes()
        let bob = try XCTUnwrap(nodes.a.connect("bob"))
        XCTAssertEqual(nodes.a.request(bob.socket, "j", "call.join", #"{"type":"default","id":"standup","create":true}"#)?["type"], "response")
        let alice = try XCTUnwrap(nodes.b.connect("alice"))

        nodes.b.gateway.forward([standup: ownerA])
        nodes.b.send(alice.socket, #"{"id":"j1","type":"call.join","data":{"type":"default","id":"standup"}}"#)
        XCTAssertEqual(nodes.b.last.frames(to: alice.socket), [], "answered only once the owner answers")
        XCTAssertEqual(nodes.b.last.mutations, [], "the client's node writes nothing of the call")
        let forwarded = try XCTUnwrap(nodes.b.last.forwards.first)
        XCTAssertEqual(nodes.b.last.forwards.count, 1)
        XCTAssertEqual(forwarded.cid, standup)
        XCTAssertEqual(forwarded.owner, ownerA)
        XCTAssertEqual(forwarded.actor, CallActor(user: CallFixture.user("alice"), connection: alice.connection))
        XCTAssertEqual(forwarded.remoteAddress, "198.51.100.1", "the address of her socket, for the owner's placement")
        XCTAssertEqual(nodes.b.gateway.awaitingCount, 1)
        nodes.b.gateway.clearRefusals()
        XCTAssertTrue(nodes.b.gateway.forwardedCalls.isEmpty, "the owners are set per batch")

        nodes.carry(from: "node-b")
        let (origin, answer) = try XCTUnwrap(nodes.a.last.answers.first)
        XCTAssertEqual(origin, "node-b")
        guard case .success(let joined) = answer.result else { return XCTFail("join refused: \(answer.result)") }
        let session = try XCTUnwrap(joined["session_id"]?.stringValue)
        let saved = nodes.a.last.mutations.compactMap { mutation -> SessionRecord? in
            if case .saveSession(let record) = mutation { return record }
            return nil
        }
        XCTAssertEqual(saved.map(\.sessionID.rawValue), [session], "the owner writes the session")
        XCTAssertEqual(saved.first?.connection, alice.connection, "of the client's connection on the other node")
        XCTAssertEqual(nodes.a.gateway.engine.callOf(session: SessionID(session)), standup)
        XCTAssertEqual(nodes.a.last.eventTypes(to: bob.socket), ["call.participant_joined"], "the owner's own client hears of it")

        nodes.carry(from: "node-a")
        let frames = nodes.b.last.frames(to: alice.socket)
        XCTAssertEqual(frames.first, .object(["id": .string("j1"), "type": .string("response"), "data": joined]), "the answer, then the events")
        XCTAssertEqual(nodes.b.gateway.awaitingCount, 0)
    }

    func test_eventsOfACallReachItsParticipantsOnEveryNodeEachWithItsOwnSeq() throws {
        var nodes = Nodes()
        let (bob, alice) = try bobOnAAndAliceThroughB(&nodes)

        // Bob, on the owner, sends an event: alice on the other node gets it with her own seq.
        let sent = nodes.a.request(bob.socket, "e", "call.send_event", #"{"type":"default","id":"standup","custom":{"hand":"up"}}"#)
        XCTAssertEqual(sent?["type"], "response")
        XCTAssertEqual(nodes.a.last.remoteNotices.map(\.type), ["call.custom"])
        nodes.carry(from: "node-a")
        let events = nodes.b.last.events(to: alice.socket)
        XCTAssertEqual(events.map { $0["type"]?.stringValue }, ["call.custom"])
        XCTAssertEqual(events.first?["call_cid"], .string("default:standup"))
        XCTAssertEqual(events.first?["seq"], .number(1), "numbered by her own node")
        XCTAssertEqual(events.first?["data"]?["custom"], .object(["hand": .string("up")]))
        XCTAssertEqual(nodes.a.gateway.clients[alice.connection], nil, "the owner holds no connection of hers")
    }

    func test_aRingFromTheOwnerReachesTheCalleeOnAnotherNodeAndHerAcceptGoesBack() throws {
        var nodes = Nodes()
        let alice = try XCTUnwrap(nodes.a.connect("alice"))
        let carol = try XCTUnwrap(nodes.b.connect("carol"))
        let call = CallFixture.cid("ringing", "c1")
        let created = nodes.a.request(alice.socket, "r", "call.join", #"{"type":"ringing","id":"c1","create":true,"ring":true,"members":["carol"]}"#)
        XCTAssertEqual(created?["type"], "response")
        XCTAssertEqual(nodes.a.last.remoteNotices.filter { $0.type == "call.ring" }.map(\.users), [[CallFixture.user("carol")]])

        nodes.carry(from: "node-a")
        let ring = try XCTUnwrap(nodes.b.last.events(to: carol.socket).first { $0["type"] == "call.ring" })
        XCTAssertEqual(ring["call_cid"], .string("ringing:c1"))
        XCTAssertEqual(ring["data"]?["from"], .string("alice"))

        nodes.b.gateway.forward([call: ownerA])
        nodes.b.send(carol.socket, #"{"id":"acc","type":"call.accept","data":{"type":"ringing","id":"c1"}}"#)
        nodes.carry(from: "node-b")
        XCTAssertEqual(nodes.a.gateway.engine.call(call)?.members[CallFixture.user("carol")]?.ringState, .accepted)
        XCTAssertTrue(nodes.a.last.eventTypes(to: alice.socket).contains("call.accepted"))
        nodes.carry(from: "node-a")
        XCTAssertEqual(nodes.b.last.frames(to: carol.socket).first?["id"], .string("acc"))
        XCTAssertEqual(nodes.b.last.frames(to: carol.socket).first?["type"], .string("response"))
    }

    func test_aSignalFromASessionJoinedThroughAnotherNodeGoesToTheCallsOwner() throws {
        var nodes = Nodes()
        let bob = try XCTUnwrap(nodes.a.connect("bob"))
        let bobJoin = try XCTUnwrap(nodes.a.request(bob.socket, "j", "call.join", #"{"type":"default","id":"standup","create":true}"#))
        let bobSession = try XCTUnwrap(bobJoin["data"]?["session_id"]?.stringValue)
        let alice = try XCTUnwrap(nodes.b.connect("alice"))
        nodes.b.gateway.forward([standup: ownerA])
        nodes.b.request(alice.socket, "j1", "call.join", #"{"type":"default","id":"standup"}"#)
        nodes.carry(from: "node-b")
        nodes.carry(from: "node-a")

        let signal = #"{"id":"s","type":"signal.send","data":{"to_session":"\#(bobSession)","kind":"offer","payload":{"sdp":"v=0"}}}"#
        let parsed = nodes.b.gateway.parse(Array(signal.utf8))
        XCTAssertEqual(nodes.b.gateway.needsLoad(parsed, on: alice.socket), standup, "the host looks up the owner of her session's call")
        XCTAssertNil(nodes.b.gateway.needsLoad(parsed), "which the frame alone does not name")
        nodes.b.gateway.forward([standup: ownerA])
        nodes.b.send(alice.socket, signal)
        XCTAssertEqual(nodes.b.last.forwards.map(\.cid), [standup])
        nodes.carry(from: "node-b")
        let delivered = try XCTUnwrap(nodes.a.last.events(to: bob.socket).first)
        XCTAssertEqual(delivered["type"], "signal")
        XCTAssertEqual(delivered["data"]?["from_user"], .string("alice"))
        XCTAssertEqual(delivered["data"]?["payload"], .object(["sdp": .string("v=0")]))
    }

    /// A connection taken over by a resume on a node that does not run its session's call
    /// (its first node died): the resumed client is told of the session, and its signals go
    /// to the call's owner as if it had joined through this node.
    func test_aConnectionTakenOverWithASessionElsewhereListsItAndSignalsThroughTheOwner() throws {
        var nodes = Nodes()
        let (bob, first) = try bobOnAAndAliceThroughB(&nodes)
        let bobSession = try XCTUnwrap(nodes.a.gateway.engine.sessions(of: bob.connection).first).rawValue
        let aliceSession = try XCTUnwrap(nodes.a.gateway.engine.sessions(of: first.connection).first)

        // node-b died; node-c (in b's place) takes alice's connection over from the store.
        nodes.b = GatewayHarness(CallFixture.configuration(), idPrefix: "c")
        nodes.b.gateway.sharesCalls = true
        let record = ConnectionRecord(
            id: first.connection, userID: CallFixture.user("alice"), resumeToken: first.resumeToken, connectedAt: CallFixture.base,
            tokenExpiresAt: CallFixture.at(3600), node: "node-c")
        let session = SessionRecord(
            sessionID: aliceSession, cid: standup, callSession: 1, userID: CallFixture.user("alice"), connection: first.connection, role: .participant,
            joinedAt: CallFixture.base)
        nodes.b.gateway.adopt(record, now: nodes.b.now, sessions: [session])
        let alice = try XCTUnwrap(nodes.b.connect("alice", resume: ResumeRequest(token: first.resumeToken, lastSeq: 0)))
        XCTAssertEqual(alice.connection, first.connection)
        XCTAssertEqual(alice.ok["sessions"], .array([.string(aliceSession.rawValue)]), "her session in node-a's call")

        let signal = #"{"id":"s","type":"signal.send","data":{"to_session":"\#(bobSession)","kind":"offer","payload":{"sdp":"v=1"}}}"#
        XCTAssertEqual(nodes.b.gateway.needsLoad(nodes.b.gateway.parse(Array(signal.utf8)), on: alice.socket), standup)
        nodes.b.gateway.forward([standup: ownerA])
        nodes.b.send(alice.socket, signal)
        nodes.carry(from: "node-b")
        let delivered = try XCTUnwrap(nodes.a.last.events(to: bob.socket).first)
        XCTAssertEqual(delivered["type"], "signal")
        XCTAssertEqual(delivered["data"]?["from_session"], .string(aliceSession.rawValue))
    }

    // MARK: Failures

    func test_aSilentOwnerGetsTheRequestAnsweredUnavailableAfterTheTimeoutAndALateAnswerIsDropped() throws {
        var nodes = Nodes()
        let alice = try XCTUnwrap(nodes.b.connect("alice"))
        nodes.b.gateway.forward([standup: ownerA])
        nodes.b.send(alice.socket, #"{"id":"j1","type":"call.join","data":{"type":"default","id":"standup"}}"#)
        let ticket = try XCTUnwrap(nodes.b.last.forwards.first?.ticket)
        nodes.b.gateway.clearRefusals()

        nodes.b.advance(CallGateway.forwardTimeout - 0.1)
        nodes.b.tick()
        XCTAssertEqual(nodes.b.last.frames(to: alice.socket), [], "not before the timeout")
        nodes.b.advance(0.1)
        nodes.b.tick()
        let error = try XCTUnwrap(nodes.b.last.frames(to: alice.socket).first)
        XCTAssertEqual(error["id"], .string("j1"))
        XCTAssertEqual(error["error"]?["code"], .string("unavailable"))
        XCTAssertTrue(error["error"]?["message"]?.stringValue?.contains("node node-a (generation 3)") == true, "\(error)")
        XCTAssertEqual(nodes.b.gateway.awaitingCount, 0)

        nodes.b.last = CallGatewayOutput()
        nodes.b.gateway.answerArrived(ForwardedCallAnswer(ticket: ticket, result: .success(.object([:]))), into: &nodes.b.last)
        XCTAssertTrue(nodes.b.last.commands.isEmpty, "the client already has its answer")
    }

    func test_aBatchThatFailsToCommitForgetsItsForwards() throws {
        var nodes = Nodes()
        let alice = try XCTUnwrap(nodes.b.connect("alice"))
        nodes.b.gateway.forward([standup: ownerA])
        nodes.b.send(alice.socket, #"{"id":"j1","type":"call.join","data":{"type":"default","id":"standup"}}"#)
        XCTAssertEqual(nodes.b.last.responded.map(\.id), [.string("j1")], "answered unavailable by the host if the commit fails")
        _ = nodes.b.gateway.rollBack(nodes.b.last, snapshot: nil)
        XCTAssertEqual(nodes.b.gateway.awaitingCount, 0)
    }

    func test_theOwnerRefusesForwardedRequestsItCannotRun() throws {
        var nodes = Nodes()
        let actor = CallActor(user: CallFixture.user("alice"), connection: ClientConnectionID("b-1"))
        func run(_ frame: String, cid: CallCID? = nil, actor: CallActor = actor) -> Result<JSONValue, SwitchboardError>? {
            let request = ForwardedCallRequest(
                ticket: "t", cid: cid ?? standup, owner: ownerA, actor: actor, remoteAddress: "198.51.100.9", frame: JSONValue.parse(Array(frame.utf8))!)
            let (placer, ids, now) = (nodes.a.placer, nodes.a.ids, nodes.a.now)
            var output = CallGatewayOutput()
            nodes.a.gateway.runForwarded(request, from: "node-b", placer: placer, newID: ids.next, now: now, into: &output)
            return output.answers.first?.answer.result
        }
        func code(_ result: Result<JSONValue, SwitchboardError>?) -> String? {
            if case .failure(let error) = result { return error.code.rawValue }
            return nil
        }
        let join = #"{"id":1,"type":"call.join","data":{"type":"default","id":"standup"}}"#
        XCTAssertEqual(code(run(join)), "unavailable", "a call it does not run, and the request does not create it")
        XCTAssertEqual(code(run(join, cid: CallFixture.cid("default", "other"))), "invalid_request", "a frame naming another call")
        XCTAssertEqual(code(run(#"{"id":1,"type":"call.join","data":{}}"#)), "invalid_request", "a frame that does not parse")
        let limited = CallActor(user: actor.user, connection: actor.connection, allowedCIDs: ["default:other"])
        XCTAssertEqual(code(run(join, actor: limited)), "forbidden", "a token limited to other calls")
        nodes.a.gateway.refuse([standup: SwitchboardError(.unavailable, "lost it")])
        XCTAssertEqual(code(run(#"{"id":1,"type":"call.join","data":{"type":"default","id":"standup","create":true}}"#)), "unavailable", "a call refused here")
        nodes.a.gateway.clearRefusals()
        let created = run(#"{"id":1,"type":"call.join","data":{"type":"default","id":"standup","create":true}}"#)
        guard case .success(let data) = created else { return XCTFail("\(String(describing: created))") }
        XCTAssertNotNil(data["session_id"], "a create runs: the owner claimed the call for it")
    }

    // MARK: Connections

    func test_aConnectionWhoseResumeWindowPassedLeavesTheCallsOfOtherNodes() throws {
        var nodes = Nodes()
        let (bob, alice) = try bobOnAAndAliceThroughB(&nodes)
        XCTAssertEqual(nodes.a.gateway.engine.call(standup)?.sessions.count, 2)

        nodes.b.closeSocket(alice.socket)
        nodes.b.advance(CallFixture.configuration().resumeWindow.seconds)
        nodes.b.tick()
        XCTAssertEqual(nodes.b.last.lostConnections, [alice.connection])
        nodes.carry(from: "node-b")
        let left = nodes.a.last.mutations.compactMap { mutation -> SessionRecord? in
            if case .saveSession(let record) = mutation, record.leftAt != nil { return record }
            return nil
        }
        XCTAssertEqual(left.map(\.connection), [alice.connection])
        XCTAssertEqual(left.first?.leftReason, "connection_lost")
        XCTAssertEqual(nodes.a.gateway.engine.call(standup)?.sessions.count, 1)

        // A connection the receiving node holds itself is not ended by another node's word.
        nodes.a.last = CallGatewayOutput()
        nodes.a.gateway.connectionsLostElsewhere([bob.connection], now: nodes.a.now, into: &nodes.a.last)
        XCTAssertEqual(nodes.a.last.mutations, [])
        XCTAssertEqual(nodes.a.gateway.engine.call(standup)?.sessions.count, 1)
    }

    func test_aNodeThatSharesNoCallsPutsNothingOutForOthers() throws {
        var h = GatewayHarness(CallFixture.configuration())
        let alice = try XCTUnwrap(h.connect("alice"))
        h.request(alice.socket, "r", "call.join", #"{"type":"ringing","id":"c1","create":true,"ring":true,"members":["carol"]}"#)
        XCTAssertTrue(h.last.remoteNotices.isEmpty)
        h.closeSocket(alice.socket)
        h.advance(CallFixture.configuration().resumeWindow.seconds)
        h.tick()
        XCTAssertTrue(h.last.lostConnections.isEmpty)
        XCTAssertTrue(h.last.forwardBatches(to: ["node-b"]).isEmpty)
    }

    // MARK: Rings of calls run elsewhere

    func test_aConnectingDeviceGetsTheRingsOfCallsRunElsewhereThatTheHostReadForIt() throws {
        var nodes = Nodes()
        let alice = try XCTUnwrap(nodes.a.connect("alice"))
        nodes.a.request(alice.socket, "r", "call.join", #"{"type":"ringing","id":"c1","create":true,"ring":true,"members":["carol"]}"#)
        nodes.a.request(alice.socket, "m", "call.join", #"{"type":"default","id":"standup","create":true,"members":["carol"]}"#)
        func detail(_ cid: CallCID) throws -> CallDetail {
            let call = try XCTUnwrap(nodes.a.gateway.engine.call(cid))
            return CallDetail(call: call.record, members: Array(call.members.values), sessions: Array(call.sessions.values), events: [])
        }
        nodes.b.gateway.know(rings: [try detail(CallFixture.cid("ringing", "c1")), try detail(standup)])
        let carol = try XCTUnwrap(nodes.b.connect("carol"))
        let rings = nodes.b.last.events(to: carol.socket).filter { $0["type"] == "call.ring" }
        XCTAssertEqual(rings.map { $0["call_cid"] }, [.string("ringing:c1")], "the meeting does not ring her")
        XCTAssertEqual(rings.first?["data"]?["from"], .string("alice"))
        XCTAssertFalse(nodes.b.gateway.holds(CallFixture.cid("ringing", "c1")), "known for the batch, not run here")

        nodes.b.gateway.clearRefusals()
        let again = try XCTUnwrap(nodes.b.connect("carol"))
        XCTAssertEqual(nodes.b.last.eventTypes(to: again.socket), [], "forgotten after the batch")
    }
}
