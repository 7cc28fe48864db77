import Foundation
import SwitchboardCore
import XCTest

/// `listCalls(_:)`: filters, newest first, the limit, cursors.
extension CallStoreContract {
    /// Six calls: two types, live and ended, with members, created a minute apart. `e` has no
    /// members: its creator is not one.
    private func storeWithHistory() throws -> any CallStore {
        let store = try makeStore()
        try store.apply([
            .saveCall(call("a", at: 0)), .saveMember(member("a", "alice")), .saveMember(member("a", "bob")),
            .saveCall(call("b", at: 60, ended: true)), .saveMember(member("b", "bob")),
            .saveCall(call("ringing:c", at: 120)), .saveMember(member("ringing:c", "carol")),
            .saveCall(call("ringing:d", at: 180, ended: true)), .saveMember(member("ringing:d", "bob")),
            .saveCall(call("e", at: 240)),
            .saveCall(call("f", at: 300, ended: true)), .saveMember(member("f", "alice")),
        ])
        return store
    }

    func listCallsFiltersByStateTypeMemberAndCreationTime() throws {
        let store = try storeWithHistory()
        XCTAssertEqual(cids(try store.listCalls(CallQuery())), ["default:f", "default:e", "ringing:d", "ringing:c", "default:b", "default:a"])
        XCTAssertEqual(try store.listCalls(CallQuery()).calls.first, call("f", at: 300, ended: true), "whole records")
        XCTAssertEqual(cids(try store.listCalls(CallQuery(state: .live))), ["default:e", "ringing:c", "default:a"])
        XCTAssertEqual(cids(try store.listCalls(CallQuery(state: .ended))), ["default:f", "ringing:d", "default:b"])
        XCTAssertEqual(cids(try store.listCalls(CallQuery(type: "ringing"))), ["ringing:d", "ringing:c"])
        XCTAssertEqual(cids(try store.listCalls(CallQuery(type: "nothing"))), [])
        XCTAssertEqual(cids(try store.listCalls(CallQuery(type: "Ringing"))), [], "types are case-sensitive")
        XCTAssertEqual(cids(try store.listCalls(CallQuery(member: user("bob")))), ["ringing:d", "default:b", "default:a"])
        XCTAssertEqual(cids(try store.listCalls(CallQuery(member: user("alice")))), ["default:f", "default:a"], "the creator of e is no member")
        XCTAssertEqual(cids(try store.listCalls(CallQuery(member: user("nobody")))), [])
        // From is inclusive, before is exclusive.
        XCTAssertEqual(cids(try store.listCalls(CallQuery(createdFrom: date(60), createdBefore: date(240)))), ["ringing:d", "ringing:c", "default:b"])
        XCTAssertEqual(cids(try store.listCalls(CallQuery(createdFrom: date(240)))), ["default:f", "default:e"])
        XCTAssertEqual(cids(try store.listCalls(CallQuery(createdBefore: date(60)))), ["default:a"])
        XCTAssertEqual(cids(try store.listCalls(CallQuery(createdFrom: date(60), createdBefore: date(60)))), [])
        XCTAssertEqual(
            cids(try store.listCalls(CallQuery(state: .ended, type: "default", member: user("bob"), createdFrom: date(0)))), ["default:b"])
        XCTAssertNil(try store.listCalls(CallQuery()).next)
        XCTAssertEqual(try store.listCalls(CallQuery(type: "nothing")), CallPage(calls: [], next: nil))
    }

    /// A call's state is its latest save: ending or reopening it moves it between the filters.
    func listCallsSeesTheLatestSaveOfACall() throws {
        let store = try storeWithHistory()
        var reopened = call("b", at: 60)
        reopened.session = 2
        try store.apply([.saveCall(call("e", at: 240, ended: true)), .saveCall(reopened), .saveMember(member("e", "bob"))])
        XCTAssertEqual(cids(try store.listCalls(CallQuery(state: .live))), ["ringing:c", "default:b", "default:a"])
        XCTAssertEqual(try store.listCalls(CallQuery(state: .live, createdFrom: date(60), createdBefore: date(61))).calls, [reopened])
        XCTAssertEqual(cids(try store.listCalls(CallQuery(member: user("bob"), limit: 2))), ["default:e", "ringing:d"])
    }

    func listCallsPagesNewestFirstWithoutRepeatsOrGaps() throws {
        let store = try makeStore()
        // Seven calls, three sharing a creation time: the cid breaks the tie.
        let all = ["default:g", "default:f", "default:z", "default:y", "default:x", "default:b", "default:a"]
        try store.apply([
            .saveCall(call("a", at: 0)), .saveCall(call("b", at: 1)), .saveCall(call("x", at: 5)), .saveCall(call("y", at: 5)),
            .saveCall(call("z", at: 5)), .saveCall(call("f", at: 9)), .saveCall(call("g", at: 10)),
        ])
        let first = try store.listCalls(CallQuery(limit: 3))
        XCTAssertEqual(cids(first), Array(all[0..<3]))
        let cursor1 = try XCTUnwrap(first.next)

        // A call created after the first page does not shift the pages that follow.
        try store.apply([.saveCall(call("new", at: 100))])
        let second = try store.listCalls(CallQuery(limit: 3, cursor: cursor1))
        XCTAssertEqual(cids(second), Array(all[3..<6]))
        let third = try store.listCalls(CallQuery(limit: 3, cursor: try XCTUnwrap(second.next)))
        XCTAssertEqual(cids(third), Array(all[6...]))
        XCTAssertNil(third.next)

        // An exact fit ends without a dangling empty page; a cursor can be used again.
        let exact = try store.listCalls(CallQuery(limit: 4, cursor: cursor1))
        XCTAssertEqual(cids(exact), Array(all[3...]))
        XCTAssertNil(exact.next)
        XCTAssertEqual(try store.listCalls(CallQuery(limit: 3, cursor: cursor1)), second)
        // Filters apply on every page.
        let filtered = try store.listCalls(CallQuery(createdBefore: date(9), limit: 2))
        XCTAssertEqual(cids(filtered), ["default:z", "default:y"])
        XCTAssertEqual(cids(try store.listCalls(CallQuery(createdBefore: date(9), limit: 2, cursor: filtered.next))), ["default:x", "default:b"])
        // Following every cursor from the start visits each call once.
        var seen: [String] = []
        var cursor: String?
        repeat {
            let page = try store.listCalls(CallQuery(limit: 2, cursor: cursor))
            seen += cids(page)
            cursor = page.next
        } while cursor != nil && seen.count < 20
        XCTAssertEqual(seen, ["default:new"] + all)
    }

    func theLimitIsClampedToTheOneListRule() throws {
        let store = try makeStore()
        try store.apply((0..<1002).map { .saveCall(call("c\($0)", at: $0)) })
        let zero = try store.listCalls(CallQuery(limit: 0))
        XCTAssertEqual(cids(zero), ["default:c1001"])
        XCTAssertNotNil(zero.next)
        XCTAssertEqual(cids(try store.listCalls(CallQuery(limit: -5))), ["default:c1001"])
        XCTAssertEqual(cids(try store.listCalls(CallQuery(limit: Int.min))), ["default:c1001"])
        let huge = try store.listCalls(CallQuery(limit: 10_000))
        XCTAssertEqual(huge.calls.count, CallQuery.limits.upperBound)
        XCTAssertEqual(huge.calls.last?.cid.cid, "default:c2")
        XCTAssertEqual(try store.listCalls(CallQuery(limit: Int.max)).calls.count, 1000)
        XCTAssertEqual(cids(try store.listCalls(CallQuery(limit: 10_000, cursor: huge.next))), ["default:c1", "default:c0"])
    }

    func anInvalidCursorIsAnInvalidRequest() throws {
        let store = try storeWithHistory()
        let invalid = [
            "", "not a cursor!", "%%%", "====", Data([0xFF, 0xFE]).base64EncodedString(),
            Data("yesterday|default:a".utf8).base64EncodedString(), Data("soon|default:a".utf8).base64EncodedString(),
            Data("2027-01-15 08:00:00.000|no-colon".utf8).base64EncodedString(), Data("1.5|nocolon".utf8).base64EncodedString(),
            Data("default:a".utf8).base64EncodedString(), Data("|".utf8).base64EncodedString(),
        ]
        for cursor in invalid {
            assertSwitchboardError(SwitchboardError(.invalidRequest, "invalid cursor"), try store.listCalls(CallQuery(cursor: cursor)), cursor)
        }
        // A real cursor is accepted, with any filter.
        let page = try store.listCalls(CallQuery(limit: 1))
        XCTAssertEqual(cids(try store.listCalls(CallQuery(limit: 1, cursor: page.next))), ["default:e"])
        XCTAssertEqual(cids(try store.listCalls(CallQuery(state: .ended, cursor: page.next))), ["ringing:d", "default:b"])
    }

    /// Cursors travel in a URL query (`?cursor=`): only `A–Z a–z 0–9 - _`, nothing to escape.
    func cursorsAreURLSafe() throws {
        let store = try makeStore()
        // Varied ids and times, so that the base64 of some cursor would need `+`, `/` or `=`.
        try store.apply((0..<40).map { index in
            .saveCall(call("call-\(String(repeating: "x", count: index % 7))\(index)", at: index * 997 + index % 3))
        })
        let allowed = Set("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_".unicodeScalars)
        var cursor: String?
        var pages = 0
        repeat {
            let page = try store.listCalls(CallQuery(limit: 1, cursor: cursor))
            if let next = page.next {
                XCTAssertFalse(next.isEmpty)
                XCTAssertTrue(next.unicodeScalars.allSatisfy(allowed.contains), next)
            }
            cursor = page.next
            pages += 1
        } while cursor != nil && pages < 50
        XCTAssertEqual(pages, 40)
    }
}
