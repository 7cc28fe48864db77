import Foundation
import SwitchboardCore
import XCTest

/// A call on a Janus SFU: its room in the call state for everyone, each session's own token
/// only in that session's join answer and `call.sfu_changed`.
final class CallEngineJanusRoomTests: XCTestCase {
    private let meeting = CallFixture.cid("default", "standup")
    private let alice = CallFixture.actor("alice")
    private let bob = CallFixture.actor("bob")
    private let keys = SFURoomKeys(key: Array(repeating: 3, count: 32))!

    private func janus(_ id: String) -> SFUAssignment {
        let node = SFUNode(id: SFUID(id)!, url: "ws://\(id).test:8188/", region: "fra", location: GeoPoint(latitude: 50, longitude: 8)!, capacity: 10, kind: .janus)
        return SFUAssignment(node, cid: meeting.cid, keys: keys)
    }

    func test_eachSessionGetsItsOwnTokenAndTheCallStateShowsOnlyTheRoom() throws {
        var h = EngineHarness()
        h.placer.assignment = janus("janus-a")
        let room = keys.roomID(call: meeting.cid, sfu: SFUID("janus-a")!)
        let first = try h.joinResult(meeting, by: alice, create: true)
        let second = try h.joinResult(meeting, by: bob)
        let aliceSession = SessionID(try XCTUnwrap(first["session_id"]?.stringValue))
        let bobSession = SessionID(try XCTUnwrap(second["session_id"]?.stringValue))

        XCTAssertEqual(first["sfu"]?["kind"], .string("janus"))
        XCTAssertEqual(first["sfu"]?["room"], .number(Double(room)))
        XCTAssertEqual(first["sfu"]?["token"], .string(keys.token(room: room, session: aliceSession)))
        XCTAssertEqual(second["sfu"]?["token"], .string(keys.token(room: room, session: bobSession)))
        XCTAssertEqual(second["call"]?["sfu"]?["room"], .number(Double(room)))
        XCTAssertEqual(first["sfu"]?["pin"], .string(keys.roomPIN(room)))
        XCTAssertNil(second["call"]?["sfu"]?["token"], "the call state everyone sees carries no token")
        XCTAssertNil(second["call"]?["sfu"]?["pin"], "nor the PIN")
        XCTAssertFalse(h.last.notices.contains { $0.data.text.contains("sb1.") }, "no token in any notice to others")
    }

    func test_aMoveToAnotherJanusTellsEachSessionItsNewRoomAndToken() throws {
        var h = EngineHarness()
        h.placer.assignment = janus("janus-a")
        let aliceSession = try h.join(meeting, by: alice, create: true)
        let bobSession = try h.join(meeting, by: bob)
        var out = CallOutput()
        let moved = SFUAssignment(
            SFUNode(id: SFUID("janus-b")!, url: "ws://janus-b.test:8188/", region: "ams", location: GeoPoint(latitude: 52, longitude: 5)!, capacity: 10, kind: .janus),
            cid: meeting.cid, keys: keys)
        h.engine.sfuChanged(meeting, to: moved, now: h.now, out: &out)

        let newRoom = keys.roomID(call: meeting.cid, sfu: SFUID("janus-b")!)
        let notices = out.notices.filter { $0.type == "call.sfu_changed" }
        XCTAssertEqual(notices.count, 2, "one per session")
        for (session, connection) in [(aliceSession, CallFixture.connection("alice")), (bobSession, CallFixture.connection("bob"))] {
            let notice = try XCTUnwrap(notices.first { $0.data["session_id"] == .string(session.rawValue) })
            XCTAssertEqual(notice.connections, [connection])
            XCTAssertEqual(notice.data["sfu"]?["room"], .number(Double(newRoom)))
            XCTAssertEqual(notice.data["sfu"]?["token"], .string(keys.token(room: newRoom, session: session)))
        }
        XCTAssertEqual(h.call(meeting)?.sfu?.room?.id, newRoom)
    }
}
