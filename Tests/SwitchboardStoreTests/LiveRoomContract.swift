import Foundation
import SwitchboardCore
import SwitchboardPostgres
import SwitchboardStore
import XCTest

/// What every ``LiveRoomReading`` store answers, written once and run against the SQLite store
/// (the rule itself, ``LiveRoom/derive(state:placements:)``) and PostgreSQL (its own query).
struct LiveRoomContract: CallFixtures {
    let makeStore: () throws -> any CallStore & LiveRoomReading

    private func placement(_ id: String, sfu: String, room: UInt64?) -> CallMutation {
        .savePlacement(
            PlacementRecord(
                callID: cid(id).cid, sfu: SFUID(sfu)!, locations: [], assignedAt: date(0), reason: "placed", room: room))
    }

    /// Every live call placed with a room, by cid, with its sessions that have not left in
    /// order; ended calls, calls on SFUs without rooms and unplaced calls hold none.
    func liveCallsPlacedWithARoomHoldItWithTheirSessions() throws {
        let store = try makeStore()
        XCTAssertEqual(try store.liveRooms(), [])
        let high = UInt64(Int64.max) + 42
        try store.apply([
            .saveCall(call("c1")), .saveCall(call("c2")), .saveCall(call("c3", ended: true)), .saveCall(call("c4")), .saveCall(call("c5")),
            placement("c1", sfu: "janus-a", room: 7), placement("c2", sfu: "livekit-b", room: nil), placement("c3", sfu: "janus-a", room: 9),
            placement("c4", sfu: "janus-b", room: high),
            .saveSession(session("s-2", "c1", "bob", at: 1)), .saveSession(session("s-1", "c1", "alice", at: 2)),
            .saveSession(session("s-3", "c1", "carol", left: true)), .saveSession(session("s-5", "c3", "dave")),
            .saveSession(session("s-6", "c5", "erin")),
        ])
        XCTAssertEqual(
            try store.liveRooms(),
            [
                LiveRoom(cid: cid("c1"), sfu: SFUID("janus-a")!, room: 7, sessions: [SessionID("s-1"), SessionID("s-2")]),
                LiveRoom(cid: cid("c4"), sfu: SFUID("janus-b")!, room: high, sessions: []),
            ])

        try store.apply([.saveSession(session("s-1", "c1", "alice", left: true)), .deletePlacement(cid("c4"))])
        XCTAssertEqual(try store.liveRooms(), [LiveRoom(cid: cid("c1"), sfu: SFUID("janus-a")!, room: 7, sessions: [SessionID("s-2")])])
    }
}

final class SQLiteLiveRoomContractTests: XCTestCase {
    func test_liveCallsPlacedWithARoomHoldItWithTheirSessions() throws {
        try LiveRoomContract(makeStore: { [unowned self] in try SQLiteStore(configuration: StoreConfiguration(directory: try self.temporaryDirectory())) })
            .liveCallsPlacedWithARoomHoldItWithTheirSessions()
    }
}

final class PostgresLiveRoomContractTests: XCTestCase {
    func test_liveCallsPlacedWithARoomHoldItWithTheirSessions() throws {
        try LiveRoomContract(makeStore: { try PostgresStore(configuration: try PostgresTestServer.running().database()) })
            .liveCallsPlacedWithARoomHoldItWithTheirSessions()
    }
}
