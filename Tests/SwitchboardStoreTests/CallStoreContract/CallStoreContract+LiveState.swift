import Foundation
import SwitchboardCore
import XCTest

/// `loadLiveState()` and `loadCall(_:)`.
extension CallStoreContract {
    func loadLiveStateHoldsLiveCallsTheirMembersActiveSessionsAndEveryConnection() throws {
        let store = try makeStore()
        try store.apply([
            .saveCall(call("live-b", at: 2)), .saveCall(call("live-a", at: 1)), .saveCall(call("gone", at: 0, ended: true)),
            .saveMember(member("live-a", "carol", at: 5)), .saveMember(member("live-a", "bob", at: 5)),
            .saveMember(member("live-a", "alice", at: 1)), .saveMember(member("gone", "dave")), .saveMember(member("live-b", "erin")),
            .saveSession(session("s-3", "live-a", "bob", at: 7)), .saveSession(session("s-1", "live-a", "alice", at: 3, left: true)),
            .saveSession(session("s-2", "live-a", "carol", at: 6)), .saveSession(session("s-9", "gone", "dave", at: 1)),
            .saveConnection(connection("k-2", "bob")), .saveConnection(connection("k-1", "alice", detached: true)),
            .saveConnection(connection("k-3", "carol")), .deleteConnection(ClientConnectionID("k-3")),
            .appendEvent(event("live-a", 1)),
        ])
        let snapshot = try store.loadLiveState()
        // Live calls by cid; their members by call, then time added, then user id.
        XCTAssertEqual(snapshot.calls, [call("live-a", at: 1), call("live-b", at: 2)])
        XCTAssertEqual(
            snapshot.members,
            [member("live-a", "alice", at: 1), member("live-a", "bob", at: 5), member("live-a", "carol", at: 5), member("live-b", "erin")])
        // Sessions that have not left, of any call (ended ones too), oldest join first.
        XCTAssertEqual(
            snapshot.sessions, [session("s-9", "gone", "dave", at: 1), session("s-2", "live-a", "carol", at: 6), session("s-3", "live-a", "bob", at: 7)])
        // Every connection, attached or detached, by id.
        XCTAssertEqual(snapshot.connections, [connection("k-1", "alice", detached: true), connection("k-2", "bob")])
    }

    /// Ties keep a fixed order: sessions joined at the same time by session id, calls by the
    /// whole cid (type first), members added together by user id.
    func liveStateTiesAreBrokenByIdentifier() throws {
        let store = try makeStore()
        try store.apply([
            .saveCall(call("ringing:a")), .saveCall(call("default:z")), .saveCall(call("default:b")),
            .saveMember(member("default:b", "zoe")), .saveMember(member("default:b", "Zed")), .saveMember(member("default:b", "amy")),
            .saveSession(session("s-b", "default:b", "zoe", at: 3)), .saveSession(session("s-a", "default:z", "amy", at: 3)),
            .saveSession(session("s-C", "default:b", "Zed", at: 3)), .saveSession(session("s-0", "default:b", "amy", at: 4)),
            .saveConnection(connection("k-b")), .saveConnection(connection("k-B")), .saveConnection(connection("k-a")),
        ])
        let snapshot = try store.loadLiveState()
        XCTAssertEqual(snapshot.calls.map(\.cid.cid), ["default:b", "default:z", "ringing:a"])
        XCTAssertEqual(snapshot.members.map(\.userID.rawValue), ["Zed", "amy", "zoe"], "upper case sorts first, byte by byte")
        XCTAssertEqual(snapshot.sessions.map(\.sessionID.rawValue), ["s-C", "s-a", "s-b", "s-0"])
        XCTAssertEqual(snapshot.connections.map(\.id.rawValue), ["k-B", "k-a", "k-b"])
    }

    /// Ending a call takes it and its members out of the live state; `loadCall` still finds it.
    func anEndedCallLeavesTheLiveStateButLoadsByItsCID() throws {
        let store = try makeStore()
        try store.apply([
            .saveCall(call("c1")), .saveMember(member("c1", "bob", at: 2)), .saveMember(member("c1", "alice", at: 1)),
            .saveSession(session("s-1", "c1", "bob")),
        ])
        XCTAssertEqual(try store.loadLiveState().calls, [call("c1")])

        var ended = call("c1", ended: true)
        ended.endedReason = .admin
        try store.apply([.saveCall(ended)])
        XCTAssertEqual(try store.loadLiveState(), CallStateSnapshot(sessions: [session("s-1", "c1", "bob")]), "its session has not left")
        let loaded = try XCTUnwrap(try store.loadCall(cid("c1")))
        XCTAssertEqual(loaded.call, ended)
        XCTAssertEqual(loaded.members, [member("c1", "alice", at: 1), member("c1", "bob", at: 2)])

        // A join that reopens it in place makes it live again.
        var reopened = call("c1")
        reopened.session = 2
        try store.apply([.saveCall(reopened)])
        XCTAssertEqual(try store.loadLiveState().calls, [reopened])
        XCTAssertEqual(try store.loadLiveState().members.count, 2)
    }

    func anUnknownCallIsNil() throws {
        let store = try makeStore()
        XCTAssertNil(try store.loadCall(cid("c1")), "an empty store")
        try store.apply([.saveCall(call("c1"))])
        XCTAssertNil(try store.loadCall(cid("c2")))
        XCTAssertNil(try store.callDetail(cid("c2"), eventLimit: 5))
        XCTAssertNil(try store.loadCall(cid("ringing:c1")), "the type is part of the cid")
        XCTAssertNil(try store.loadCall(cid("default:C1")), "ids are case-sensitive")
        XCTAssertEqual(try store.loadCall(cid("c1"))?.members, [])
    }

    /// What a ring needs to know of its users (`UserPresence`): the live calls of their active
    /// sessions, whether a connection of theirs is attached or waits for a resume, their devices
    /// oldest first, the live calls ringing them; every user asked for gets an entry. The one rule is `UserPresence.derive`.
    func presenceHoldsEachUsersLiveCallsConnectionsAndDevices() throws {
        let store = try makeStore()
        let phone = DeviceRecord(userID: user("bob"), provider: .apns, token: "apns-b", createdAt: date(20))
        let tablet = DeviceRecord(userID: user("bob"), provider: .fcm, token: "fcm-b", createdAt: date(10))
        let erins = DeviceRecord(userID: user("erin"), provider: .fcm, token: "fcm-e", createdAt: date(5))
        try store.apply([
            .saveCall(call("live-a")), .saveCall(call("live-b")), .saveCall(call("gone", ended: true)),
            .saveSession(session("s-1", "live-a", "bob")), .saveSession(session("s-2", "live-b", "bob", at: 2)),
            .saveSession(session("s-3", "gone", "carol")), .saveSession(session("s-4", "live-a", "carol", left: true)),
            .saveSession(session("s-5", "live-b", "erin")),
            .saveConnection(connection("k-1", "bob")), .saveConnection(connection("k-2", "carol", detached: true)),
            .saveConnection(connection("k-3", "dave")), .saveConnection(connection("k-4", "dave", detached: true)),
            .saveDevice(phone), .saveDevice(tablet), .saveDevice(erins),
            .saveMember(member("live-a", "dave", state: .ringing)), .saveMember(member("gone", "dave", state: .ringing)),
            .saveMember(member("live-b", "bob", state: .accepted)), .saveMember(member("live-b", "zed", state: .rejected)),
        ])
        let asked: Set<UserID> = [user("bob"), user("carol"), user("dave"), user("zed")]
        let presence = try store.presence(of: asked)
        XCTAssertEqual(
            presence,
            [
                user("bob"): UserPresence(calls: [cid("live-a"), cid("live-b")], attached: true, devices: [tablet, phone]),
                user("carol"): UserPresence(resumable: true),
                user("dave"): UserPresence(attached: true, resumable: true, rings: [cid("live-a")]),
                user("zed"): UserPresence(),
            ], "carol left one call and the other ended: she is in none; dave's ring in an ended call is over; erin was not asked for")
        XCTAssertEqual(presence, UserPresence.derive(asked, from: try store.loadLiveState()), "the one rule")
        XCTAssertEqual(try store.presence(of: []), [:])
    }
}
