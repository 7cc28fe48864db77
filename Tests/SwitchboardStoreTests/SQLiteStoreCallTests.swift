import Foundation
import GRDB
import SwitchboardCore
import SwitchboardStore
import XCTest

/// The call store (migration `v6_calls`) against a real SQLite file in a fresh temporary directory.
final class SQLiteStoreCallTests: XCTestCase {
    private var directory: String!
    private var store: SQLiteStore!

    override func setUpWithError() throws {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("call-store-\(UUID().uuidString)", isDirectory: true)
        directory = url.path
        addTeardownBlock { try? FileManager.default.removeItem(at: url) }
        store = try SQLiteStore(configuration: StoreConfiguration(directory: directory))
    }

    override func tearDown() {
        store = nil
    }

    // MARK: - Fixtures

    /// Whole seconds, so that stored `datetime` text reads back to an equal `Date`.
    private func date(_ offset: Int) -> Date { Date(timeIntervalSince1970: TimeInterval(1_800_000_000 + offset)) }
    private func cid(_ text: String) -> CallCID { CallCID(cid: text.contains(":") ? text : "default:" + text)! }
    private func user(_ name: String) -> UserID { UserID(name)! }

    private func call(_ id: String, at offset: Int = 0, ended: Bool = false, by creator: String = "alice") -> CallRecord {
        CallRecord(
            cid: cid(id), createdBy: user(creator), createdAt: date(offset), endedAt: ended ? date(offset + 60) : nil,
            endedReason: ended ? .endedByUser : nil)
    }

    private func member(_ id: String, _ name: String, at offset: Int = 0, state: RingState = .none) -> MemberRecord {
        MemberRecord(cid: cid(id), userID: user(name), addedAt: date(offset), ringState: state)
    }

    private func session(_ sid: String, _ id: String, _ name: String, at offset: Int = 0, left: Bool = false) -> SessionRecord {
        SessionRecord(
            sessionID: SessionID(sid), cid: cid(id), callSession: 1, userID: user(name), connection: ClientConnectionID("conn-\(name)"),
            role: .participant, joinedAt: date(offset), leftAt: left ? date(offset + 5) : nil, leftReason: left ? "left" : nil)
    }

    private func event(_ id: String, _ index: Int) -> CallEventRecord {
        CallEventRecord(cid: cid(id), callSession: 1, at: date(index), type: "call.test", payload: .object(["n": .number(Double(index))]))
    }

    private func connection(_ id: String, _ name: String = "alice", detached: Bool = false) -> ConnectionRecord {
        ConnectionRecord(
            id: ClientConnectionID(id), userID: user(name), resumeToken: "token-\(id)", connectedAt: date(1), tokenExpiresAt: date(3600),
            detachedAt: detached ? date(30) : nil)
    }

    private func cids(_ page: CallPage) -> [String] { page.calls.map(\.cid.cid) }

    private func assertSwitchboardError<T>(
        _ code: SwitchboardError.Code, _ expression: @autoclosure () throws -> T, file: StaticString = #filePath, line: UInt = #line
    ) {
        XCTAssertThrowsError(try expression(), file: file, line: line) { error in
            XCTAssertEqual((error as? SwitchboardError)?.code, code, "\(error)", file: file, line: line)
        }
    }

    // MARK: - Round trips

    func test_everyRecordTypeRoundTripsWithAllItsFields() throws {
        let custom: JSONValue = .object([
            "title": .string("stand-up \"daily\" ✓"), "n": .number(3), "ratio": .number(0.25), "flag": .bool(true), "none": .null,
            "list": .array([.string("a"), .number(-1), .object(["deep": .bool(false)])]), "nul": .string("a\u{0}b"),
        ])
        let fullCall = CallRecord(
            cid: cid("ringing:c1"), createdBy: user("alice"), createdAt: date(0), session: 3, endedAt: date(90), endedReason: .noAnswer,
            rung: true, autoCancelAt: date(30), emptyDeadline: date(40), custom: custom)
        let fullMember = MemberRecord(
            cid: cid("ringing:c1"), userID: user("bob"), addedAt: date(1), ringState: .rejected, ringReason: .busy,
            ringUpdatedAt: date(2), ringDeadline: date(31))
        let fullSession = SessionRecord(
            sessionID: SessionID("s-1"), cid: cid("ringing:c1"), callSession: 3, userID: user("bob"), connection: ClientConnectionID("k-1"),
            role: .initiator, joinedAt: date(5), leftAt: date(80), leftReason: "timeout",
            location: LocationHint(rtt: ["sfu-a": 12.5, "sfu-b": 40], latitude: 50.1, longitude: -8.75, region: "fra", ip: "10.0.0.1"),
            media: MediaState(audio: true, video: false, screenshare: true, speaking: true, audioLevel: 0.37, pinned: true))
        let fullEvent = CallEventRecord(cid: cid("ringing:c1"), callSession: 3, at: date(6), type: "call.ring", payload: custom)
        let fullConnection = connection("k-1", "bob", detached: true)

        try store.apply([
            .saveCall(fullCall), .saveMember(fullMember), .saveSession(fullSession), .appendEvent(fullEvent), .saveConnection(fullConnection),
        ])

        let loaded = try XCTUnwrap(try store.loadCall(cid("ringing:c1")))
        XCTAssertEqual(loaded.call, fullCall)
        XCTAssertEqual(loaded.members, [fullMember])
        XCTAssertEqual(
            try store.callDetail(cid("ringing:c1"), eventLimit: 10),
            CallDetail(call: fullCall, members: [fullMember], sessions: [fullSession], events: [fullEvent]))
        XCTAssertEqual(try store.loadLiveState().connections, [fullConnection])
    }

    func test_optionalFieldsRoundTripAsNil() throws {
        let bare = call("bare")
        let plain = member("bare", "bob")
        let joined = session("s-1", "bare", "bob")
        try store.apply([.saveCall(bare), .saveMember(plain), .saveSession(joined), .saveConnection(connection("k-1"))])
        XCTAssertEqual(
            try store.loadLiveState(),
            CallStateSnapshot(calls: [bare], members: [plain], sessions: [joined], connections: [connection("k-1")]))
        XCTAssertEqual(bare.custom, .object([:]))
        XCTAssertNil(joined.location)
    }

    func test_savesUpsertInPlaceAndDeleteConnectionRemovesIt() throws {
        try store.apply([.saveCall(call("c1")), .saveMember(member("c1", "bob", state: .ringing)), .saveSession(session("s-1", "c1", "bob"))])
        try store.apply([.saveConnection(connection("k-1")), .saveConnection(connection("k-2"))])

        var reopened = call("c1")
        reopened.session = 2
        reopened.rung = true
        reopened.custom = .object(["v": .number(2)])
        let accepted = MemberRecord(cid: cid("c1"), userID: user("bob"), addedAt: date(0), ringState: .accepted, ringUpdatedAt: date(9))
        let left = session("s-1", "c1", "bob", left: true)
        try store.apply([
            .saveCall(reopened), .saveMember(accepted), .saveSession(left), .saveConnection(connection("k-2", detached: true)),
            .deleteConnection(ClientConnectionID("k-1")), .deleteConnection(ClientConnectionID("never-existed")),
        ])

        let detail = try XCTUnwrap(try store.callDetail(cid("c1"), eventLimit: 10))
        XCTAssertEqual(detail.call, reopened)
        XCTAssertEqual(detail.members, [accepted])
        XCTAssertEqual(detail.sessions, [left])
        XCTAssertEqual(try store.loadLiveState().connections, [connection("k-2", detached: true)])
    }

    func test_anUnknownCallIsNil() throws {
        try store.apply([.saveCall(call("c1"))])
        XCTAssertNil(try store.loadCall(cid("c2")))
        XCTAssertNil(try store.callDetail(cid("c2"), eventLimit: 5))
        XCTAssertNil(try store.loadCall(cid("ringing:c1")), "the type is part of the cid")
    }

    // MARK: - Atomicity

    /// A trigger installed through a second connection makes the batch's last insert fail in SQLite.
    func test_aBatchWhoseLastMutationFailsInSQLiteChangesNothing() throws {
        try store.apply([.saveCall(call("c0")), .saveMember(member("c0", "alice"))])
        let raw = try DatabaseQueue(path: StoreConfiguration(directory: directory).databasePath)
        try raw.write { db in
            try db.execute(
                sql: """
                    CREATE TRIGGER refuse_boom BEFORE INSERT ON call_event WHEN NEW.type = 'boom'
                    BEGIN SELECT RAISE(ABORT, 'boom refused'); END
                    """)
        }
        try raw.close()

        var changed = call("c0")
        changed.session = 2
        var batch: [CallMutation] = [
            .saveCall(changed), .saveCall(call("c1")), .saveMember(member("c1", "bob")), .saveSession(session("s-1", "c1", "bob")),
            .saveConnection(connection("k-1")), .deleteConnection(ClientConnectionID("k-0")), .appendEvent(event("c1", 1)),
        ]
        var boom = event("c1", 2)
        boom.type = "boom"
        batch.append(.appendEvent(boom))

        assertSwitchboardError(.unavailable, try store.apply(batch))
        XCTAssertNil(try store.loadCall(cid("c1")))
        XCTAssertEqual(try store.loadCall(cid("c0"))?.call.session, 1)
        XCTAssertEqual(
            try store.loadLiveState(), CallStateSnapshot(calls: [call("c0")], members: [member("c0", "alice")]))

        // The same batch without the refused row commits whole.
        batch.removeLast()
        try store.apply(batch)
        XCTAssertEqual(try store.loadCall(cid("c0"))?.call.session, 2)
        XCTAssertEqual(try store.callDetail(cid("c1"), eventLimit: 10)?.events, [event("c1", 1)])
        XCTAssertEqual(try store.loadLiveState().connections, [connection("k-1")])
    }

    /// SQLite text would be cut at a NUL on reading: the batch is refused whole instead.
    func test_aNULInALaterMutationRefusesTheWholeBatch() throws {
        var bad = connection("k-1")
        bad.resumeToken = "tok\u{0}en"
        assertSwitchboardError(.invalidRequest, try store.apply([.saveCall(call("c1")), .saveMember(member("c1", "bob")), .saveConnection(bad)]))
        XCTAssertEqual(try store.loadLiveState(), CallStateSnapshot())
        XCTAssertNil(try store.loadCall(cid("c1")))
    }

    // MARK: - Live state

    func test_loadLiveStateHoldsLiveCallsTheirMembersActiveSessionsAndEveryConnection() throws {
        try store.apply([
            .saveCall(call("live-b", at: 2)), .saveCall(call("live-a", at: 1)), .saveCall(call("gone", at: 0, ended: true)),
            .saveMember(member("live-a", "carol", at: 5)), .saveMember(member("live-a", "bob", at: 5)),
            .saveMember(member("live-a", "alice", at: 1)), .saveMember(member("gone", "dave")), .saveMember(member("live-b", "erin")),
            .saveSession(session("s-3", "live-a", "bob", at: 7)), .saveSession(session("s-1", "live-a", "alice", at: 3, left: true)),
            .saveSession(session("s-2", "live-a", "carol", at: 6)), .saveSession(session("s-9", "gone", "dave", at: 1)),
            .saveConnection(connection("k-2", "bob")), .saveConnection(connection("k-1", "alice", detached: true)),
            .appendEvent(event("live-a", 1)),
        ])
        let snapshot = try store.loadLiveState()
        XCTAssertEqual(snapshot.calls, [call("live-a", at: 1), call("live-b", at: 2)])
        XCTAssertEqual(
            snapshot.members,
            [member("live-a", "alice", at: 1), member("live-a", "bob", at: 5), member("live-a", "carol", at: 5), member("live-b", "erin")])
        // Sessions that have not left, of any call, oldest join first.
        XCTAssertEqual(
            snapshot.sessions.map(\.sessionID.rawValue), ["s-9", "s-2", "s-3"])
        XCTAssertEqual(snapshot.connections, [connection("k-1", "alice", detached: true), connection("k-2", "bob")])
    }

    func test_committedStateSurvivesReopeningTheFile() throws {
        let batch: [CallMutation] = [
            .saveCall(call("c1", at: 1)), .saveCall(call("c2", at: 2, ended: true)), .saveMember(member("c1", "bob", state: .ringing)),
            .saveSession(session("s-1", "c1", "bob")), .appendEvent(event("c1", 1)), .appendEvent(event("c1", 2)),
            .saveConnection(connection("k-1", "bob")),
        ]
        try store.apply(batch)
        let before = try store.loadLiveState()
        let detailBefore = try store.callDetail(cid("c1"), eventLimit: 10)
        store = nil

        let reopened = try SQLiteStore(configuration: StoreConfiguration(directory: directory))
        XCTAssertEqual(try reopened.loadLiveState(), before)
        XCTAssertEqual(before.calls.map(\.cid.cid), ["default:c1"])
        XCTAssertEqual(try reopened.callDetail(cid("c1"), eventLimit: 10), detailBefore)
        XCTAssertEqual(detailBefore?.events.count, 2)
        XCTAssertEqual(try reopened.loadCall(cid("c2"))?.call, call("c2", at: 2, ended: true))
        // The event log continues after the reopened rows.
        try reopened.apply([.appendEvent(event("c1", 3))])
        XCTAssertEqual(try reopened.callDetail(cid("c1"), eventLimit: 10)?.events, [event("c1", 1), event("c1", 2), event("c1", 3)])
    }

    // MARK: - History

    /// Six calls: two types, live and ended, with members, created a minute apart.
    private func saveHistory() throws {
        try store.apply([
            .saveCall(call("a", at: 0)), .saveMember(member("a", "alice")), .saveMember(member("a", "bob")),
            .saveCall(call("b", at: 60, ended: true)), .saveMember(member("b", "bob")),
            .saveCall(call("ringing:c", at: 120)), .saveMember(member("ringing:c", "carol")),
            .saveCall(call("ringing:d", at: 180, ended: true)), .saveMember(member("ringing:d", "bob")),
            .saveCall(call("e", at: 240)),
            .saveCall(call("f", at: 300, ended: true)), .saveMember(member("f", "alice")),
        ])
    }

    func test_listCallsFiltersByStateTypeMemberAndCreationTime() throws {
        try saveHistory()
        XCTAssertEqual(cids(try store.listCalls(CallQuery())), ["default:f", "default:e", "ringing:d", "ringing:c", "default:b", "default:a"])
        XCTAssertEqual(cids(try store.listCalls(CallQuery(state: .live))), ["default:e", "ringing:c", "default:a"])
        XCTAssertEqual(cids(try store.listCalls(CallQuery(state: .ended))), ["default:f", "ringing:d", "default:b"])
        XCTAssertEqual(cids(try store.listCalls(CallQuery(type: "ringing"))), ["ringing:d", "ringing:c"])
        XCTAssertEqual(cids(try store.listCalls(CallQuery(type: "nothing"))), [])
        XCTAssertEqual(cids(try store.listCalls(CallQuery(member: user("bob")))), ["ringing:d", "default:b", "default:a"])
        XCTAssertEqual(cids(try store.listCalls(CallQuery(member: user("nobody")))), [])
        // From is inclusive, before is exclusive.
        XCTAssertEqual(cids(try store.listCalls(CallQuery(createdFrom: date(60), createdBefore: date(240)))), ["ringing:d", "ringing:c", "default:b"])
        XCTAssertEqual(cids(try store.listCalls(CallQuery(createdFrom: date(240)))), ["default:f", "default:e"])
        XCTAssertEqual(cids(try store.listCalls(CallQuery(createdBefore: date(60)))), ["default:a"])
        XCTAssertEqual(
            cids(try store.listCalls(CallQuery(state: .ended, type: "default", member: user("bob"), createdFrom: date(0)))), ["default:b"])
        XCTAssertNil(try store.listCalls(CallQuery()).next)
    }

    func test_listCallsPagesNewestFirstWithoutRepeatsOrGaps() throws {
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

        // An exact fit ends without a dangling empty page.
        let exact = try store.listCalls(CallQuery(limit: 4, cursor: cursor1))
        XCTAssertEqual(cids(exact), Array(all[3...]))
        XCTAssertNil(exact.next)
        // Filters apply on every page.
        let filtered = try store.listCalls(CallQuery(createdBefore: date(9), limit: 2))
        XCTAssertEqual(cids(filtered), ["default:z", "default:y"])
        XCTAssertEqual(cids(try store.listCalls(CallQuery(createdBefore: date(9), limit: 2, cursor: filtered.next))), ["default:x", "default:b"])
    }

    func test_theLimitIsClampedToOneThroughOneThousand() throws {
        try store.apply((0..<1002).map { .saveCall(call("c\($0)", at: $0)) })
        let zero = try store.listCalls(CallQuery(limit: 0))
        XCTAssertEqual(cids(zero), ["default:c1001"])
        XCTAssertNotNil(zero.next)
        XCTAssertEqual(cids(try store.listCalls(CallQuery(limit: -5))), ["default:c1001"])
        let huge = try store.listCalls(CallQuery(limit: 10_000))
        XCTAssertEqual(huge.calls.count, 1000)
        XCTAssertEqual(huge.calls.last?.cid.cid, "default:c2")
        XCTAssertEqual(cids(try store.listCalls(CallQuery(limit: 10_000, cursor: huge.next))), ["default:c1", "default:c0"])
    }

    func test_anInvalidCursorIsAnInvalidRequest() throws {
        try saveHistory()
        let forged = Data("yesterday|default:a".utf8).base64EncodedString()
        let badCID = Data("2027-01-15 08:00:00.000|no-colon".utf8).base64EncodedString()
        for cursor in ["", "not a cursor!", "%%%", forged, badCID, Data([0xFF, 0xFE]).base64EncodedString()] {
            XCTAssertThrowsError(try store.listCalls(CallQuery(cursor: cursor)), "cursor \(cursor)") { error in
                XCTAssertEqual(error as? SwitchboardError, SwitchboardError(.invalidRequest, "invalid cursor"))
            }
        }
        // A real cursor is accepted.
        let page = try store.listCalls(CallQuery(limit: 1))
        XCTAssertEqual(cids(try store.listCalls(CallQuery(limit: 1, cursor: page.next))), ["default:e"])
    }

    // MARK: - Detail

    func test_callDetailHoldsOrderedMembersEverySessionAndTheLastEvents() throws {
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
        XCTAssertEqual(detail.sessions, [session("s-a", "c1", "amy", at: 10, left: true), session("s-b", "c1", "bob", at: 20), reopenedSession])
        XCTAssertEqual(detail.events, [event("c1", 8), event("c1", 9), event("c1", 10)])
        XCTAssertEqual(try store.callDetail(cid("c1"), eventLimit: 100)?.events, (1...10).map { event("c1", $0) })
        XCTAssertEqual(try store.callDetail(cid("c1"), eventLimit: 0)?.events, [])
        XCTAssertEqual(try store.callDetail(cid("c1"), eventLimit: -1)?.events, [], "a negative limit is not 'no limit'")
        XCTAssertEqual(try store.callDetail(cid("c2"), eventLimit: 1)?.events, [event("c2", 110)])
    }

    // MARK: - Migration

    func test_aFileAtV5IsUpgradedToV6AndKeepsItsSFURows() throws {
        store = nil
        let other = FileManager.default.temporaryDirectory.appendingPathComponent("call-store-v5-\(UUID().uuidString)", isDirectory: true)
        try FileManager.default.createDirectory(at: other, withIntermediateDirectories: true)
        addTeardownBlock { try? FileManager.default.removeItem(at: other) }
        let raw = try DatabaseQueue(path: StoreConfiguration(directory: other.path).databasePath)
        try SQLiteStore.migrate(raw, upTo: "v5_placement_sources")
        try raw.write { db in
            XCTAssertFalse(try db.tableExists("call"))
            try db.execute(
                sql: """
                    INSERT INTO sfu (id, url, region, latitude, longitude, capacity, weight, state, secret, reported_load, last_heartbeat_at)
                    VALUES ('sfu-a', 'wss://a/ws', 'fra', 50.1, 8.7, 100, 1.5, 'active', 's3cret', 7, ?)
                    """, arguments: [date(0)])
            try db.execute(
                sql: """
                    INSERT INTO call_placement (call_id, sfu_id, locations, sources, assigned_at, reason)
                    VALUES ('default:c1', 'sfu-a', '[]', 'rtt', ?, 'placed')
                    """, arguments: [date(1)])
        }
        try raw.close()

        let upgraded = try SQLiteStore(configuration: StoreConfiguration(directory: other.path))
        XCTAssertEqual(SQLiteStore.knownMigrations.last, "v6_calls")
        XCTAssertEqual(try upgraded.appliedMigrations(), SQLiteStore.knownMigrations)
        XCTAssertEqual(
            try upgraded.allSFUs(),
            [
                SFURecord(
                    id: SFUID("sfu-a")!, url: "wss://a/ws", region: "fra", latitude: 50.1, longitude: 8.7, capacity: 100, weight: 1.5,
                    state: .active, secret: "s3cret", reportedLoad: 7, lastHeartbeatAt: date(0))
            ])
        XCTAssertEqual(
            try upgraded.allPlacements(),
            [PlacementRecord(callID: "default:c1", sfu: SFUID("sfu-a")!, locations: [], sources: [.rtt], assignedAt: date(1), reason: "placed")])
        try upgraded.apply([.saveCall(call("c1")), .saveMember(member("c1", "alice"))])
        XCTAssertEqual(try upgraded.loadCall(cid("c1"))?.members, [member("c1", "alice")])
        XCTAssertEqual(try upgraded.integrityCheck(), "ok")
    }

    func test_theV6SchemaHasItsIndexes() throws {
        let raw = try DatabaseQueue(path: StoreConfiguration(directory: directory).databasePath)
        defer { try? raw.close() }
        try raw.read { db in
            for table in ["call", "call_member", "call_session", "call_event", "client_connection"] {
                XCTAssertTrue(try db.tableExists(table), table)
            }
            let names = try String.fetchAll(
                db,
                sql: """
                    SELECT name FROM sqlite_master WHERE type = 'index' AND sql IS NOT NULL
                    AND tbl_name IN ('call', 'call_member', 'call_session', 'call_event') ORDER BY name
                    """)
            XCTAssertEqual(
                names,
                [
                    "call_event_on_cid_seq", "call_member_on_user_id", "call_on_created_at_cid", "call_on_ended_at", "call_on_type",
                    "call_session_active", "call_session_on_cid_joined_at",
                ])
            let plan = try Row.fetchAll(db, sql: "EXPLAIN QUERY PLAN SELECT * FROM call_session WHERE left_at IS NULL ORDER BY joined_at")
                .map { row -> String in row["detail"] }.joined(separator: " ")
            XCTAssertTrue(plan.contains("call_session_active"), plan)
        }
    }
}
