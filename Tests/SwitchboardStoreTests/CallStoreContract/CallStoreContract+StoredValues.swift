import Foundation
import SwitchboardCore
import XCTest

/// What a value reads back as: times to the millisecond, JSON as its text, identifiers byte for byte.
extension CallStoreContract {
    /// Times are kept to the nearest millisecond (`yyyy-MM-dd HH:mm:ss.SSS` in SQLite), in every record.
    func timesAreKeptToTheNearestMillisecond() throws {
        let store = try makeStore()
        let base = date(0).timeIntervalSince1970
        func at(_ fraction: Double) -> Date { Date(timeIntervalSince1970: base + fraction) }
        let created = CallRecord(
            cid: cid("c1"), createdBy: user("alice"), createdAt: at(0.123_456), endedAt: at(9.999_6), endedReason: .empty,
            autoCancelAt: at(0.000_4), emptyDeadline: at(1.001_49))
        let added = MemberRecord(
            cid: cid("c1"), userID: user("bob"), addedAt: at(0.5), ringState: .missed, ringUpdatedAt: at(2.718_28), ringDeadline: at(3.141_59))
        var joined = session("s-1", "c1", "bob")
        joined.joinedAt = at(4.000_6)
        joined.leftAt = at(5.555_6)
        var logged = event("c1", 0)
        logged.at = at(6.789_01)
        let connected = ConnectionRecord(
            id: ClientConnectionID("k-1"), userID: user("bob"), resumeToken: "t", connectedAt: at(7.000_1), tokenExpiresAt: at(8.123_7),
            detachedAt: at(0.999_9))
        try store.apply([.saveCall(created), .saveMember(added), .saveSession(joined), .appendEvent(logged), .saveConnection(connected)])

        let detail = try XCTUnwrap(try store.callDetail(cid("c1"), eventLimit: 1))
        let expected: [(Date?, Double, String)] = [
            (detail.call.createdAt, 0.123, "createdAt"), (detail.call.endedAt, 10, "endedAt"), (detail.call.autoCancelAt, 0, "autoCancelAt"),
            (detail.call.emptyDeadline, 1.001, "emptyDeadline"), (detail.members.first?.addedAt, 0.5, "addedAt"),
            (detail.members.first?.ringUpdatedAt, 2.718, "ringUpdatedAt"), (detail.members.first?.ringDeadline, 3.142, "ringDeadline"),
            (detail.sessions.first?.joinedAt, 4.001, "joinedAt"), (detail.sessions.first?.leftAt, 5.556, "leftAt"),
            (detail.events.first?.at, 6.789, "at"),
        ]
        for (actual, fraction, name) in expected { assertTime(actual, base + fraction, name) }
        let connection = try XCTUnwrap(try store.loadLiveState().connections.first)
        assertTime(connection.connectedAt, base + 7, "connectedAt")
        assertTime(connection.tokenExpiresAt, base + 8.124, "tokenExpiresAt")
        assertTime(connection.detachedAt, base + 1, "detachedAt")
        // The same time read again is the same `Date`.
        XCTAssertEqual(try store.loadCall(cid("c1"))?.call, detail.call)
    }

    /// History orders and filters on the stored millisecond: creation times within the same
    /// millisecond tie (the cid decides), and the bounds of a query are rounded the same way.
    func historyComparesCreationTimesToTheMillisecond() throws {
        let store = try makeStore()
        let base = date(0).timeIntervalSince1970
        func at(_ fraction: Double) -> Date { Date(timeIntervalSince1970: base + fraction) }
        var first = call("a")
        first.createdAt = at(0.100_4)
        var second = call("b")
        second.createdAt = at(0.100_1)
        var third = call("c")
        third.createdAt = at(0.200_2)
        try store.apply([.saveCall(first), .saveCall(second), .saveCall(third)])

        XCTAssertEqual(cids(try store.listCalls(CallQuery())), ["default:c", "default:b", "default:a"])
        XCTAssertEqual(cids(try store.listCalls(CallQuery(createdFrom: at(0.100_3)))), ["default:c", "default:b", "default:a"])
        XCTAssertEqual(cids(try store.listCalls(CallQuery(createdFrom: at(0.100_6)))), ["default:c"])
        XCTAssertEqual(cids(try store.listCalls(CallQuery(createdBefore: at(0.100_4)))), [])
        XCTAssertEqual(cids(try store.listCalls(CallQuery(createdBefore: at(0.200_4)))), ["default:b", "default:a"])
        XCTAssertEqual(cids(try store.listCalls(CallQuery(createdBefore: at(0.199_4)))), ["default:b", "default:a"])
        let page = try store.listCalls(CallQuery(limit: 2))
        XCTAssertEqual(cids(try store.listCalls(CallQuery(limit: 2, cursor: page.next))), ["default:a"])
    }

    /// Custom call data and event payloads read back as their JSON text parses: non-finite
    /// numbers as `null`, `-0` as `0`, and a document nested deeper than the parser's cap as `null`.
    func customDataAndPayloadsReadBackAsTheirJSONText() throws {
        let store = try makeStore()
        func nested(_ depth: Int) -> JSONValue { (0..<depth).reduce(JSONValue.string("core")) { inner, _ in .array([inner]) } }
        var odd = call("c1")
        odd.custom = .object([
            "inf": .number(.infinity), "ninf": .number(-.infinity), "nan": .number(.nan), "zero": .number(-0.0),
            "list": .array([.number(.nan), .number(1e300), .number(0.1 + 0.2)]), "deep": nested(3),
        ])
        var allowed = call("c2")
        allowed.custom = nested(JSONScanner.maximumDepth)
        var tooDeep = call("c3")
        tooDeep.custom = nested(JSONScanner.maximumDepth + 1)
        var payload = event("c1", 1)
        payload.payload = .array([.number(.infinity), .number(-0.0), .string("x")])
        var deepPayload = event("c1", 2)
        deepPayload.payload = nested(JSONScanner.maximumDepth + 1)
        try store.apply([.saveCall(odd), .saveCall(allowed), .saveCall(tooDeep), .appendEvent(payload), .appendEvent(deepPayload)])

        let custom = try XCTUnwrap(try store.loadCall(cid("c1"))?.call.custom)
        XCTAssertEqual(
            custom,
            .object([
                "inf": .null, "ninf": .null, "nan": .null, "zero": .number(0), "list": .array([.null, .number(1e300), .number(0.1 + 0.2)]),
                "deep": nested(3),
            ]))
        XCTAssertEqual(custom["zero"]?.doubleValue?.sign, .plus)
        XCTAssertEqual(try store.loadCall(cid("c2"))?.call.custom, nested(JSONScanner.maximumDepth))
        XCTAssertEqual(try store.loadCall(cid("c3"))?.call.custom, .null)
        let events = try XCTUnwrap(try store.callDetail(cid("c1"), eventLimit: 2)?.events)
        XCTAssertEqual(events.map(\.payload), [.array([.null, .number(0), .string("x")]), .null])
        XCTAssertEqual(events.first?.payload.arrayValue?[1].doubleValue?.sign, .plus)
    }

    /// Identifiers and filters compare byte for byte, as SQLite's BINARY collation does: spellings
    /// Swift's `String` calls equal (`Å` as U+00C5, as U+212B, as `A` + U+030A) are different keys.
    func identifiersCompareByteForByte() throws {
        let store = try makeStore()
        let letterA = "\u{00C5}", angstrom = "\u{212B}", combining = "A\u{030A}", ae = "\u{00C6}"
        try store.apply([
            .saveCall(call("K:c1")), .saveCall(call("c2", at: 1)),
            .saveMember(member("c2", angstrom)), .saveMember(member("c2", letterA)), .saveMember(member("c2", ae)),
            .saveSession(session("s-\(letterA)", "c2", letterA)), .saveSession(session("s-\(angstrom)", "c2", angstrom)),
            .saveConnection(connection("k-\(angstrom)")), .saveConnection(connection("k-\(letterA)")),
            .saveConnection(connection("k-\(combining)")), .deleteConnection(ClientConnectionID("k-\(combining)")),
        ])
        func scalars(_ text: String) -> [UInt32] { text.unicodeScalars.map(\.value) }
        // By UTF-8 bytes: U+00C5 (C3 85) < U+00C6 (C3 86) < U+212B (E2 84 AB).
        let members = try XCTUnwrap(try store.loadCall(cid("c2"))?.members)
        XCTAssertEqual(members.map { scalars($0.userID.rawValue) }, [[0xC5], [0xC6], [0x212B]])
        let snapshot = try store.loadLiveState()
        XCTAssertEqual(snapshot.members.count, 3)
        XCTAssertEqual(snapshot.sessions.map { scalars($0.sessionID.rawValue) }, [scalars("s-\(letterA)"), scalars("s-\(angstrom)")])
        XCTAssertEqual(snapshot.connections.map { scalars($0.id.rawValue) }, [scalars("k-\(letterA)"), scalars("k-\(angstrom)")])

        XCTAssertEqual(cids(try store.listCalls(CallQuery(member: user(letterA)))), ["default:c2"])
        XCTAssertEqual(cids(try store.listCalls(CallQuery(member: user(combining)))), [], "no member is spelled A + U+030A")
        XCTAssertEqual(cids(try store.listCalls(CallQuery(type: "K"))), ["K:c1"])
        XCTAssertEqual(cids(try store.listCalls(CallQuery(type: "\u{212A}"))), [], "the Kelvin sign is not K")

        // Saving one spelling again replaces that one only.
        try store.apply([.saveMember(member("c2", angstrom, state: .accepted)), .deleteConnection(ClientConnectionID("k-\(letterA)"))])
        XCTAssertEqual(try store.loadCall(cid("c2"))?.members.map(\.ringState), [.none, .none, .accepted])
        XCTAssertEqual(try store.loadLiveState().connections.map { scalars($0.id.rawValue) }, [scalars("k-\(angstrom)")])
    }
}
