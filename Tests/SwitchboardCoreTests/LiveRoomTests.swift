import Foundation
import SwitchboardCore
import XCTest

/// What the rooms of live calls become for the reconciler: per SFU, each sized by its type.
final class LiveRoomTests: XCTestCase {
    func test_roomsGoToTheirSFUSizedByTheirCallType() {
        let a = SFUID("janus-a")!, b = SFUID("janus-b")!
        let rooms = [
            LiveRoom(cid: CallCID(cid: "default:x")!, sfu: a, room: 1, sessions: [SessionID("s1")]),
            LiveRoom(cid: CallCID(cid: "ringing:y")!, sfu: b, room: 2, sessions: []),
            LiveRoom(cid: CallCID(cid: "default:z")!, sfu: a, room: 3, sessions: [SessionID("s2"), SessionID("s3")]),
        ]
        let desired = LiveRoom.desired(rooms) { $0 == "ringing" ? 2 : 25 }
        XCTAssertEqual(
            desired[a],
            [
                DesiredRoom(room: 1, call: "default:x", publishers: 25, sessions: [SessionID("s1")]),
                DesiredRoom(room: 3, call: "default:z", publishers: 25, sessions: [SessionID("s2"), SessionID("s3")]),
            ])
        XCTAssertEqual(desired[b], [DesiredRoom(room: 2, call: "ringing:y", publishers: 2, sessions: [])])
        XCTAssertEqual(desired.count, 2)
        XCTAssertEqual(LiveRoom.desired([]) { _ in 1 }, [:])
    }
}
