import Foundation
import SwitchboardCore
import XCTest

/// `callDetail(_:eventLimit:)`.
extension CallStoreContract {
    func callDetailHoldsOrderedMembersEverySessionAndTheLastEvents() throws {
        let store = try makeStore()
        var mutations: [CallMutation] = [
            .saveCall(call("c1")), .saveCall(call("c2")), .saveMember(member("c1", "zed", at: 1)), .saveMember(member("c1", "bob", at: 2)),
            .saveMember(member("c1", "amy", at: 2)), .saveMember(member("c2", "other")),
            .saveSession(session("s-b", "c1", "bob", at: 20)), .saveSession(session("s-a", "c1", "amy", at: 10, left: true)),
            .saveSession(session("s-c", "c2", "other", at: 15)),
        ]
        var reopenedSession = session("s-z", "c1", "zed", at: 30)
        reopenedSession.callSession = 2
        mutations.append(.saveSession(reopenedSession))
        for index in 1...10 {
            mutations.append(.appendEvent(event("c1", index)))
            mutations.append(.appendEvent(event("c2", 100 + index)))
        }
        try store.apply(mutations)

        let detail = try XCTUnwrap(try store.callDetail(cid("c1"), eventLimit: 3))
        XCTAssertEqual(detail.call, call("c1"))
        XCTAssertEqual(detail.members.map(\.userID.rawValue), ["zed", "amy", "bob"])
        // Every session of every call session, left or not, oldest join first.
        XCTAssertEqual(detail.sessions, [session("s-a", "c1", "amy", at: 10, left: true), session("s-b", "c1", "bob", at: 20), reopenedSession])
        XCTAssertEqual(detail.events, [event("c1", 8), event("c1", 9), event("c1", 10)])
        XCTAssertEqual(try store.callDetail(cid("c1"), eventLimit: 100)?.events, (1...10).map { event("c1", $0) })
        XCTAssertEqual(try store.callDetail(cid("c1"), eventLimit: 10)?.events, (1...10).map { event("c1", $0) })
        XCTAssertEqual(try store.callDetail(cid("c1"), eventLimit: Int.max)?.events.count, 10)
        XCTAssertEqual(try store.callDetail(cid("c1"), eventLimit: 0)?.events, [])
        XCTAssertEqual(try store.callDetail(cid("c1"), eventLimit: -1)?.events, [], "a negative limit is not 'no limit'")
        XCTAssertEqual(try store.callDetail(cid("c2"), eventLimit: 1)?.events, [event("c2", 110)])
        XCTAssertEqual(try store.callDetail(cid("c2"), eventLimit: 1)?.sessions, [session("s-c", "c2", "other", at: 15)])
    }

    /// Events are kept in the order they were appended, whatever their times and call sessions.
    func eventsKeepTheirAppendOrder() throws {
        let store = try makeStore()
        var late = event("c1", 50)
        late.callSession = 2
        late.type = "call.late"
        var early = event("c1", -50)
        early.type = "call.early"
        try store.apply([.saveCall(call("c1")), .appendEvent(late), .appendEvent(event("c1", 0))])
        try store.apply([.appendEvent(early), .appendEvent(event("other", -100))])
        XCTAssertEqual(try store.callDetail(cid("c1"), eventLimit: 10)?.events, [late, event("c1", 0), early])
        XCTAssertEqual(try store.callDetail(cid("c1"), eventLimit: 2)?.events, [event("c1", 0), early], "the last ones appended")
    }

    /// Sessions joined at the same time come in session id order, byte by byte.
    func callDetailSessionTiesAreBrokenBySessionID() throws {
        let store = try makeStore()
        try store.apply([
            .saveCall(call("c1")), .saveSession(session("s-b", "c1", "bob", at: 5)), .saveSession(session("s-B", "c1", "amy", at: 5, left: true)),
            .saveSession(session("s-a", "c1", "zed", at: 5)), .saveSession(session("s-0", "c1", "carol", at: 6)),
        ])
        XCTAssertEqual(try store.callDetail(cid("c1"), eventLimit: 0)?.sessions.map(\.sessionID.rawValue), ["s-B", "s-a", "s-b", "s-0"])
    }

    /// `lastEvent(of:type:)`: the one of that type appended last, whatever came after it, across
    /// batches; none for another type or an unknown call.
    func lastEventIsTheNewestOfItsType() throws {
        let store = try makeStore()
        var moved = event("c1", 5)
        moved.type = "call.sfu_changed"
        moved.payload = .object(["sfu": .object(["id": .string("sfu-a")])])
        var movedAgain = event("c1", 7)
        movedAgain.type = "call.sfu_changed"
        movedAgain.payload = .object(["sfu": .object(["id": .string("sfu-b")])])
        var elsewhere = event("c2", 9)
        elsewhere.type = "call.sfu_changed"
        try store.apply([.saveCall(call("c1")), .saveCall(call("c2")), .appendEvent(event("c1", 1)), .appendEvent(moved)])
        try store.apply([.appendEvent(movedAgain), .appendEvent(event("c1", 8)), .appendEvent(elsewhere)])
        XCTAssertEqual(try store.lastEvent(of: cid("c1"), type: "call.sfu_changed"), movedAgain)
        XCTAssertEqual(try store.lastEvent(of: cid("c1"), type: "call.test"), event("c1", 8))
        XCTAssertEqual(try store.lastEvent(of: cid("c2"), type: "call.sfu_changed"), elsewhere)
        XCTAssertNil(try store.lastEvent(of: cid("c1"), type: "call.ended"))
        XCTAssertNil(try store.lastEvent(of: cid("nobody"), type: "call.test"))
    }
}
