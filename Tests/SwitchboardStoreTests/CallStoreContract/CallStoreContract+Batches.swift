import Foundation
import SwitchboardCore
import XCTest

/// `apply(_:)`: every mutation, upserts in place, batch order, and all-or-nothing batches.
extension CallStoreContract {
    func everyRecordTypeRoundTripsWithAllItsFields() throws {
        let store = try makeStore()
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
        XCTAssertEqual(try store.loadLiveState(), CallStateSnapshot(connections: [fullConnection]), "an ended call is not live")
    }

    func optionalFieldsRoundTripAsNil() throws {
        let store = try makeStore()
        XCTAssertEqual(try store.loadLiveState(), CallStateSnapshot(), "a new store is empty")
        let bare = call("bare")
        let plain = member("bare", "bob")
        let joined = session("s-1", "bare", "bob")
        try store.apply([.saveCall(bare), .saveMember(plain), .saveSession(joined), .saveConnection(connection("k-1"))])
        XCTAssertEqual(
            try store.loadLiveState(),
            CallStateSnapshot(calls: [bare], members: [plain], sessions: [joined], connections: [connection("k-1")]))
        XCTAssertEqual(bare.custom, .object([:]))
        XCTAssertNil(joined.location)
        XCTAssertNil(joined.leftReason)
    }

    func savesUpsertInPlaceAndDeleteConnectionRemovesIt() throws {
        let store = try makeStore()
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

    /// A session is keyed by its id alone: saving it under another call moves it there.
    func aSessionSavedUnderAnotherCallMovesToIt() throws {
        let store = try makeStore()
        try store.apply([.saveCall(call("c1")), .saveCall(call("c2")), .saveSession(session("s-1", "c1", "bob"))])
        var moved = session("s-1", "c2", "carol", at: 4)
        moved.callSession = 2
        moved.role = .initiator
        try store.apply([.saveSession(moved)])
        XCTAssertEqual(try store.callDetail(cid("c1"), eventLimit: 0)?.sessions, [])
        XCTAssertEqual(try store.callDetail(cid("c2"), eventLimit: 0)?.sessions, [moved])
        XCTAssertEqual(try store.loadLiveState().sessions, [moved])
    }

    /// Mutations take effect in batch order; events only ever append.
    func mutationsApplyInBatchOrder() throws {
        let store = try makeStore()
        var second = call("c1")
        second.session = 2
        try store.apply([
            .saveCall(call("c1")), .saveCall(second), .saveMember(member("c1", "bob", state: .ringing)),
            .saveMember(member("c1", "bob", state: .missed)),
            .saveConnection(connection("k-1")), .deleteConnection(ClientConnectionID("k-1")),
            .deleteConnection(ClientConnectionID("k-2")), .saveConnection(connection("k-2")),
            .appendEvent(event("c1", 1)), .appendEvent(event("c1", 1)),
        ])
        XCTAssertEqual(try store.loadCall(cid("c1"))?.call, second)
        XCTAssertEqual(try store.loadCall(cid("c1"))?.members, [member("c1", "bob", state: .missed)])
        XCTAssertEqual(try store.loadLiveState().connections, [connection("k-2")])
        XCTAssertEqual(try store.callDetail(cid("c1"), eventLimit: 10)?.events, [event("c1", 1), event("c1", 1)], "equal events both stay")

        try store.apply([])
        try store.apply([.appendEvent(event("c1", 2))])
        XCTAssertEqual(try store.callDetail(cid("c1"), eventLimit: 10)?.events, [event("c1", 1), event("c1", 1), event("c1", 2)])
    }

    /// A batch the size of a busy commit (a call hub's batch holds dozens of joins): calls,
    /// members, sessions, connections and events interleaved, keys saved and deleted several
    /// times over. What is stored is what running the batch row by row would leave.
    func aLargeInterleavedBatchLeavesWhatItsLastWritesSay() throws {
        let store = try makeStore()
        var batch: [CallMutation] = []
        for i in 0..<120 {
            let id = "big\(i % 40)"
            var record = call(id, at: i % 40)
            record.session = i / 40 + 1
            batch += [
                .saveCall(record), .saveMember(member(id, "u\(i)", state: i.isMultiple(of: 2) ? .ringing : .accepted)),
                .saveSession(session("s-\(i % 60)", id, "u\(i)", left: i >= 60)), .appendEvent(event(id, i)),
                .saveConnection(connection("k-\(i % 30)", "u\(i)")),
            ]
            if i % 3 == 0 { batch.append(.deleteConnection(ClientConnectionID("k-\(i % 30)"))) }
        }
        try store.apply(batch)

        for n in [0, 17, 39] {
            let loaded = try XCTUnwrap(try store.loadCall(cid("big\(n)")))
            XCTAssertEqual(loaded.call.session, 3, "the last of the three saves of big\(n)")
            XCTAssertEqual(loaded.members.map(\.userID.rawValue).sorted(), ["u\(n)", "u\(n + 40)", "u\(n + 80)"].sorted())
            let events = try XCTUnwrap(try store.callDetail(cid("big\(n)"), eventLimit: 10)?.events)
            XCTAssertEqual(events, [event("big\(n)", n), event("big\(n)", n + 40), event("big\(n)", n + 80)], "append order")
        }
        let state = try store.loadLiveState()
        // Sessions s-0…s-59 were saved twice; the second save (i ≥ 60) left each one.
        XCTAssertEqual(state.sessions, [])
        // k-j was last written by i = 90 + j: saved, then deleted when that i is a multiple of 3.
        let kept = (0..<30).filter { !(90 + $0).isMultiple(of: 3) }.map { "k-\($0)" }
        XCTAssertEqual(state.connections.map(\.id.rawValue).sorted(), kept.sorted())
        XCTAssertEqual(state.connections.first { $0.id.rawValue == "k-1" }?.userID.rawValue, "u91")
    }

    /// Rows of one call need no call row, and a call needs none of its rows: a batch commits in any order.
    func rowsOfACallThatIsNotStoredAreKept() throws {
        let store = try makeStore()
        try store.apply([
            .saveMember(member("later", "bob")), .saveSession(session("s-1", "later", "bob")), .appendEvent(event("later", 1)),
        ])
        XCTAssertNil(try store.loadCall(cid("later")))
        XCTAssertNil(try store.callDetail(cid("later"), eventLimit: 10))
        XCTAssertEqual(try store.loadLiveState(), CallStateSnapshot(sessions: [session("s-1", "later", "bob")]))

        try store.apply([.saveCall(call("later"))])
        XCTAssertEqual(
            try store.callDetail(cid("later"), eventLimit: 10),
            CallDetail(
                call: call("later"), members: [member("later", "bob")], sessions: [session("s-1", "later", "bob")],
                events: [event("later", 1)]))
    }

    // MARK: - All or nothing

    /// SQLite text would be cut at a NUL on reading: the batch is refused whole, naming the field.
    func aNULInAFreeTextFieldRefusesTheWholeBatch() throws {
        let store = try makeStore()
        try store.apply([.saveCall(call("c0")), .saveConnection(connection("k-0"))])
        let before = try store.loadLiveState()

        var badSessionID = session("s-1", "c0", "bob")
        badSessionID.sessionID = SessionID("s\u{0}1")
        var badConnectionOfSession = session("s-1", "c0", "bob")
        badConnectionOfSession.connection = ClientConnectionID("conn\u{0}bob")
        var badLeftReason = session("s-1", "c0", "bob", left: true)
        badLeftReason.leftReason = "gone\u{0}away"
        var badEventType = event("c0", 1)
        badEventType.type = "call.\u{0}test"
        let badConnectionID = ConnectionRecord(
            id: ClientConnectionID("k\u{0}1"), userID: user("bob"), resumeToken: "token", connectedAt: date(1), tokenExpiresAt: date(2))
        var badResumeToken = connection("k-1")
        badResumeToken.resumeToken = "tok\u{0}en"

        let refusals: [(CallMutation, String)] = [
            (.saveSession(badSessionID), "session_id"), (.saveSession(badConnectionOfSession), "connection_id"),
            (.saveSession(badLeftReason), "left_reason"), (.appendEvent(badEventType), "event type"),
            (.saveConnection(badConnectionID), "connection id"), (.saveConnection(badResumeToken), "resume_token"),
            // SQLite binds text as a C string: `k-0\0x` would delete `k-0`.
            (.deleteConnection(ClientConnectionID("k-0\u{0}x")), "connection id"),
        ]
        for (bad, field) in refusals {
            var changed = call("c0")
            changed.session = 2
            let batch: [CallMutation] = [
                .saveCall(changed), .saveCall(call("c1")), .saveMember(member("c1", "bob")), .saveSession(session("s-2", "c1", "bob")),
                .appendEvent(event("c1", 1)), .deleteConnection(ClientConnectionID("k-0")), .saveConnection(connection("k-2")), bad,
            ]
            assertSwitchboardError(
                SwitchboardError(.invalidRequest, "call store: \(field) must not contain NUL characters"), try store.apply(batch), field)
            XCTAssertEqual(try store.loadLiveState(), before, field)
            XCTAssertNil(try store.loadCall(cid("c1")), field)
        }
        // Nothing of the refused batches is left behind: not the member, the session nor the event.
        try store.apply([.saveCall(call("c1"))])
        XCTAssertEqual(try store.callDetail(cid("c1"), eventLimit: 10), CallDetail(call: call("c1"), members: [], sessions: [], events: []))
        // NULs in JSON are escaped, so custom data and payloads may hold them.
        var payload = event("c0", 2)
        payload.payload = .object(["k\u{0}": .string("v\u{0}")])
        try store.apply([.appendEvent(payload)])
        XCTAssertEqual(try store.callDetail(cid("c0"), eventLimit: 1)?.events, [payload])
    }

    /// A session whose media or location has no JSON form (a non-finite number) cannot be stored:
    /// the batch is refused whole. SQLite reports it as `unavailable`.
    func aSessionWithANonFiniteNumberRefusesTheWholeBatch() throws {
        let store = try makeStore()
        try store.apply([.saveCall(call("c0")), .saveSession(session("s-0", "c0", "alice"))])
        let before = try store.loadLiveState()

        var loud = session("s-0", "c0", "alice")
        loud.media.audioLevel = .nan
        var lost = session("s-1", "c0", "bob")
        lost.location = LocationHint(latitude: .infinity)
        var farAway = session("s-2", "c0", "carol")
        farAway.location = LocationHint(rtt: ["sfu-a": -.infinity])
        for bad in [loud, lost, farAway] {
            var changed = call("c0")
            changed.session = 2
            assertSwitchboardError(
                .unavailable, try store.apply([.saveCall(changed), .saveConnection(connection("k-1")), .saveSession(bad)]), bad.sessionID.rawValue)
            XCTAssertEqual(try store.loadLiveState(), before, bad.sessionID.rawValue)
        }
    }
}

extension CallStoreContract {
    /// A call's SFU placement is a mutation like any other: committed with its batch, replaced
    /// by a later one, gone with a refused batch and deleted by the batch that ends the call.
    func placementsCommitWithTheirBatchAndGoWithIt() throws {
        let store = try makeStore()
        let standup = call("standup")
        func placed(_ id: String, on sfu: String, room: UInt64? = nil) -> CallMutation {
            .savePlacement(PlacementRecord(
                callID: "default:\(id)", sfu: SFUID(sfu)!, locations: [LocationHint(region: "fra")], sources: [.region],
                assignedAt: Date(timeIntervalSince1970: 1_800_000_000), reason: "placed", room: room))
        }
        try store.apply([.saveCall(standup), placed("standup", on: "sfu-fra")])
        XCTAssertEqual(try placements(store), ["default:standup": "sfu-fra"])
        try store.apply([placed("standup", on: "sfu-ams")])
        XCTAssertEqual(try placements(store), ["default:standup": "sfu-ams"], "a later placement replaces it")
        // A Janus room id (up to 2^53) reads back exactly; a move to a heartbeat SFU clears it.
        try store.apply([placed("standup", on: "janus-fra", room: (1 << 53) - 1)])
        XCTAssertEqual(try placements(store), ["default:standup": "janus-fra#9007199254740991"])
        try store.apply([placed("standup", on: "sfu-ams")])
        XCTAssertEqual(try placements(store), ["default:standup": "sfu-ams"])
        let refused = session("s\u{0}1", "other", "bob")
        XCTAssertThrowsError(try store.apply([placed("other", on: "sfu-fra"), .saveSession(refused)]))
        XCTAssertEqual(try placements(store), ["default:standup": "sfu-ams"], "a refused batch places nothing")
        try store.apply([.deletePlacement(standup.cid)])
        XCTAssertEqual(try placements(store), [:])
    }
}
