import Foundation
import SwitchboardCore
import SwitchboardTesting
import XCTest

/// The in-memory call store keeps the SQLite store's semantics (see `SQLiteStoreCallTests`):
/// the same orderings, filters, cursor paging and all-or-nothing batches.
final class InMemoryCallStoreTests: XCTestCase {
    private let store = InMemoryCallStore()

    private func date(_ offset: Int) -> Date { Date(timeIntervalSince1970: TimeInterval(1_800_000_000 + offset)) }
    private func cid(_ text: String) -> CallCID { CallCID(cid: text.contains(":") ? text : "default:" + text)! }
    private func user(_ name: String) -> UserID { UserID(name)! }

    private func call(_ id: String, at offset: Int = 0, ended: Bool = false) -> CallRecord {
        CallRecord(cid: cid(id), createdBy: user("alice"), createdAt: date(offset), endedAt: ended ? date(offset + 60) : nil)
    }

    private func member(_ id: String, _ name: String, at offset: Int = 0) -> MemberRecord {
        MemberRecord(cid: cid(id), userID: user(name), addedAt: date(offset))
    }

    private func session(_ sid: String, _ id: String, _ name: String, at offset: Int = 0, left: Bool = false) -> SessionRecord {
        SessionRecord(
            sessionID: SessionID(sid), cid: cid(id), callSession: 1, userID: user(name), connection: ClientConnectionID("conn-\(name)"),
            role: .participant, joinedAt: date(offset), leftAt: left ? date(offset + 5) : nil)
    }

    private func event(_ id: String, _ index: Int) -> CallEventRecord {
        CallEventRecord(cid: cid(id), callSession: 1, at: date(index), type: "call.test", payload: .object(["n": .number(Double(index))]))
    }

    private func connection(_ id: String) -> ConnectionRecord {
        ConnectionRecord(id: ClientConnectionID(id), userID: user("alice"), resumeToken: "t-\(id)", connectedAt: date(0), tokenExpiresAt: date(60))
    }

    private func cids(_ page: CallPage) -> [String] { page.calls.map(\.cid.cid) }

    func test_listCallsFiltersByStateTypeMemberAndCreationTime() throws {
        try store.apply([
            .saveCall(call("a", at: 0)), .saveMember(member("a", "alice")), .saveMember(member("a", "bob")),
            .saveCall(call("b", at: 60, ended: true)), .saveMember(member("b", "bob")),
            .saveCall(call("ringing:c", at: 120)), .saveMember(member("ringing:c", "carol")),
            .saveCall(call("ringing:d", at: 180, ended: true)), .saveMember(member("ringing:d", "bob")),
            .saveCall(call("e", at: 240)), .saveCall(call("f", at: 300, ended: true)),
        ])
        XCTAssertEqual(cids(try store.listCalls(CallQuery())), ["default:f", "default:e", "ringing:d", "ringing:c", "default:b", "default:a"])
        XCTAssertEqual(cids(try store.listCalls(CallQuery(state: .live))), ["default:e", "ringing:c", "default:a"])
        XCTAssertEqual(cids(try store.listCalls(CallQuery(state: .ended))), ["default:f", "ringing:d", "default:b"])
        XCTAssertEqual(cids(try store.listCalls(CallQuery(type: "ringing"))), ["ringing:d", "ringing:c"])
        XCTAssertEqual(cids(try store.listCalls(CallQuery(member: user("bob")))), ["ringing:d", "default:b", "default:a"])
        XCTAssertEqual(cids(try store.listCalls(CallQuery(createdFrom: date(60), createdBefore: date(240)))), ["ringing:d", "ringing:c", "default:b"])
        XCTAssertEqual(cids(try store.listCalls(CallQuery(state: .ended, type: "default", member: user("bob")))), ["default:b"])
    }

    func test_listCallsPagesNewestFirstWithoutRepeatsOrGaps() throws {
        let all = ["default:g", "default:f", "default:z", "default:y", "default:x", "default:b", "default:a"]
        try store.apply([
            .saveCall(call("a", at: 0)), .saveCall(call("b", at: 1)), .saveCall(call("x", at: 5)), .saveCall(call("y", at: 5)),
            .saveCall(call("z", at: 5)), .saveCall(call("f", at: 9)), .saveCall(call("g", at: 10)),
        ])
        let first = try store.listCalls(CallQuery(limit: 3))
        XCTAssertEqual(cids(first), Array(all[0..<3]))
        try store.apply([.saveCall(call("new", at: 100))])
        let second = try store.listCalls(CallQuery(limit: 3, cursor: try XCTUnwrap(first.next)))
        XCTAssertEqual(cids(second), Array(all[3..<6]))
        let third = try store.listCalls(CallQuery(limit: 3, cursor: try XCTUnwrap(second.next)))
        XCTAssertEqual(cids(third), Array(all[6...]))
        XCTAssertNil(third.next)
        XCTAssertEqual(cids(try store.listCalls(CallQuery(limit: 0))), ["default:new"])
        XCTAssertEqual(try store.listCalls(CallQuery(limit: 10_000)).calls.count, 8)
    }

    func test_anInvalidCursorIsAnInvalidRequest() {
        for cursor in ["", "not a cursor!", Data("soon|default:a".utf8).base64EncodedString(), Data("1.5|nocolon".utf8).base64EncodedString()] {
            XCTAssertThrowsError(try store.listCalls(CallQuery(cursor: cursor)), cursor) { error in
                XCTAssertEqual(error as? SwitchboardError, SwitchboardError(.invalidRequest, "invalid cursor"))
            }
        }
    }

    func test_liveStateAndDetailMatchTheSQLiteOrderings() throws {
        var mutations: [CallMutation] = [
            .saveCall(call("live-b", at: 2)), .saveCall(call("live-a", at: 1)), .saveCall(call("gone", ended: true)),
            .saveMember(member("live-a", "carol", at: 5)), .saveMember(member("live-a", "bob", at: 5)), .saveMember(member("live-a", "zed", at: 1)),
            .saveMember(member("gone", "dave")),
            .saveSession(session("s-3", "live-a", "bob", at: 7)), .saveSession(session("s-1", "live-a", "zed", at: 3, left: true)),
            .saveSession(session("s-9", "gone", "dave", at: 1)),
            .saveConnection(connection("k-2")), .saveConnection(connection("k-1")), .saveConnection(connection("k-3")),
            .deleteConnection(ClientConnectionID("k-3")),
        ]
        mutations += (1...5).map { .appendEvent(event("live-a", $0)) }
        try store.apply(mutations)

        let snapshot = try store.loadLiveState()
        XCTAssertEqual(snapshot.calls, [call("live-a", at: 1), call("live-b", at: 2)])
        XCTAssertEqual(snapshot.members.map(\.userID.rawValue), ["zed", "bob", "carol"])
        XCTAssertEqual(snapshot.sessions.map(\.sessionID.rawValue), ["s-9", "s-3"])
        XCTAssertEqual(snapshot.connections.map(\.id.rawValue), ["k-1", "k-2"])

        let detail = try XCTUnwrap(try store.callDetail(cid("live-a"), eventLimit: 2))
        XCTAssertEqual(detail.sessions.map(\.sessionID.rawValue), ["s-1", "s-3"])
        XCTAssertEqual(detail.events, [event("live-a", 4), event("live-a", 5)])
        XCTAssertEqual(try store.callDetail(cid("live-a"), eventLimit: -1)?.events, [])
        XCTAssertEqual(try store.loadCall(cid("gone"))?.members, [member("gone", "dave")])
        XCTAssertNil(try store.loadCall(cid("never")))
    }

    func test_anInjectedFailureChangesNothingAndIsNotCounted() throws {
        try store.apply([.saveCall(call("c0"))])
        XCTAssertEqual(store.applyCount, 1)
        store.failNextApply = true
        var changed = call("c0")
        changed.session = 2
        XCTAssertThrowsError(try store.apply([.saveCall(changed), .saveCall(call("c1")), .saveConnection(connection("k-1"))])) { error in
            XCTAssertEqual(error as? SwitchboardError, SwitchboardError(.unavailable, "store failure injected"))
        }
        XCTAssertEqual(try store.loadLiveState(), CallStateSnapshot(calls: [call("c0")]))
        XCTAssertEqual(store.applyCount, 1)
        XCTAssertFalse(store.failNextApply, "the injected failure is one-shot")

        // A NUL in a later mutation refuses the whole batch, as SQLite does.
        var bad = connection("k-1")
        bad.resumeToken = "a\u{0}b"
        XCTAssertThrowsError(try store.apply([.saveCall(changed), .saveConnection(bad)]))
        XCTAssertEqual(try store.loadCall(cid("c0"))?.call.session, 1)

        try store.apply([.saveCall(changed)])
        XCTAssertEqual(try store.loadCall(cid("c0"))?.call.session, 2)
        XCTAssertEqual(store.applyCount, 2)
        XCTAssertEqual(store.appliedBatches, [[.saveCall(call("c0"))], [.saveCall(changed)]])

        store.failAllApplies = true
        XCTAssertThrowsError(try store.apply([]))
        XCTAssertThrowsError(try store.apply([]))
        store.failAllApplies = false
        try store.apply([])
        XCTAssertEqual(store.applyCount, 3)
    }
}
