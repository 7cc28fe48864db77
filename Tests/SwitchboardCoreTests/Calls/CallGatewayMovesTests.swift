import Foundation
import SwitchboardCore
import XCTest

/// Client connections between nodes (ADR 0012, step 3), the gateway's half: what a start
/// restores, a connection taken over by a resume, one another node took over.
final class CallGatewayMovesTests: XCTestCase {
    private let standup = CallFixture.cid("default", "standup")

    private func connection(_ id: String, _ user: String, node: String?) -> ConnectionRecord {
        ConnectionRecord(
            id: ClientConnectionID(id), userID: CallFixture.user(user), resumeToken: "token-\(id)", connectedAt: CallFixture.base,
            tokenExpiresAt: CallFixture.at(3600), node: node)
    }

    private func session(_ id: String, _ user: String, connection: String) -> SessionRecord {
        SessionRecord(
            sessionID: SessionID(id), cid: standup, callSession: 1, userID: CallFixture.user(user), connection: ClientConnectionID(connection),
            role: .participant, joinedAt: CallFixture.base)
    }

    func test_aStartRestoresOnlyTheConnectionsItMayHoldAndKeepsTheSessionsOfThoseOnRecordElsewhere() throws {
        var h = GatewayHarness(CallFixture.configuration())
        let snapshot = CallStateSnapshot(
            calls: [CallRecord(cid: standup, createdBy: CallFixture.user("alice"), createdAt: CallFixture.base)],
            sessions: [
                session("s-1", "alice", connection: "k-mine"), session("s-2", "bob", connection: "k-other"), session("s-3", "carol", connection: "k-old"),
                session("s-4", "dave", connection: "k-nowhere"),
            ],
            connections: [connection("k-mine", "alice", node: "me"), connection("k-other", "bob", node: "them"), connection("k-old", "carol", node: nil)])
        h.gateway.restore(snapshot, now: h.now, node: "me", into: &h.last)
        XCTAssertEqual(Set(h.gateway.clients.keys), [ClientConnectionID("k-mine"), ClientConnectionID("k-old")], "its own, and those no node stamped")
        let left = h.last.mutations.compactMap { mutation -> String? in
            if case .saveSession(let record) = mutation, record.leftAt != nil { return record.sessionID.rawValue }
            return nil
        }
        XCTAssertEqual(left, ["s-4"], "only the session whose connection is on record nowhere leaves")
        XCTAssertEqual(h.gateway.sessionsHeldElsewhere, [ClientConnectionID("k-other")], "for the host to ask the store about")

        // A start without a node (one daemon, whose store stamps nothing) restores what no node
        // stamped: there, every connection.
        var single = GatewayHarness(CallFixture.configuration())
        single.gateway.restore(snapshot, now: single.now, into: &single.last)
        XCTAssertEqual(Set(single.gateway.clients.keys), [ClientConnectionID("k-old")])
    }

    func test_aConnectionTakenOverResumesIncompleteAndOneMovedElsewhereIsLetGo() throws {
        var h = GatewayHarness(CallFixture.configuration())
        let record = connection("k-1", "alice", node: "me")
        XCTAssertFalse(h.gateway.holdsResume(ResumeRequest(token: "token-k-1", lastSeq: 3), user: CallFixture.user("alice")))
        h.gateway.adopt(record, now: h.now)
        XCTAssertTrue(h.gateway.holdsResume(ResumeRequest(token: "token-k-1", lastSeq: 3), user: CallFixture.user("alice")))
        XCTAssertFalse(h.gateway.holdsResume(ResumeRequest(token: "token-k-1", lastSeq: 3), user: CallFixture.user("bob")), "another user's")
        let alice = try XCTUnwrap(h.connect("alice", resume: ResumeRequest(token: "token-k-1", lastSeq: 3)))
        XCTAssertEqual(alice.connection, ClientConnectionID("k-1"))
        XCTAssertEqual(alice.ok["resumed"], .bool(true))
        XCTAssertEqual(alice.ok["replay_complete"], .bool(false))

        h.last = CallGatewayOutput()
        h.gateway.connectionsMoved([ClientConnectionID("k-1"), ClientConnectionID("k-unknown")], into: &h.last)
        XCTAssertEqual(h.last.commands, [.close(alice.socket, .replaced, reason: "resumed on another node")])
        XCTAssertEqual(h.last.mutations, [], "the row is the other node's")
        XCTAssertTrue(h.gateway.clients.isEmpty)
        XCTAssertEqual(h.gateway.socketCount, 0)
    }
}
