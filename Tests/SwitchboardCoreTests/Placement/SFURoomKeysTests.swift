import SwitchboardCore
import XCTest

/// The room ids, room secrets and session tokens of Janus calls: derived, stable, distinct.
final class SFURoomKeysTests: XCTestCase {
    private let keys = SFURoomKeys(key: Array(repeating: 7, count: 32))!
    private let other = SFURoomKeys(key: Array(repeating: 8, count: 32))!
    private let janusA = SFUID("janus-a")!
    private let janusB = SFUID("janus-b")!

    func test_aShortKeyIsRefused() {
        XCTAssertNil(SFURoomKeys(key: Array(repeating: 1, count: 31)))
    }

    func test_theRoomOfACallIsStablePerSFUJavaScriptSafeAndKeyed() {
        let room = keys.roomID(call: "default:standup", sfu: janusA)
        XCTAssertEqual(room, keys.roomID(call: "default:standup", sfu: janusA), "the same call on the same SFU: the same room")
        XCTAssertNotEqual(room, keys.roomID(call: "default:standup", sfu: janusB), "a move gets another room")
        XCTAssertNotEqual(room, keys.roomID(call: "default:retro", sfu: janusA))
        XCTAssertNotEqual(room, other.roomID(call: "default:standup", sfu: janusA), "another key, other rooms")
        XCTAssertTrue((1..<(UInt64(1) << 53)).contains(room))
        let many = Set((0..<10_000).map { keys.roomID(call: "default:c\($0)", sfu: janusA) })
        XCTAssertEqual(many.count, 10_000, "no collisions among 10,000 calls")
    }

    func test_secretsAndTokensAreDerivedPerRoomAndSession() {
        let room = keys.roomID(call: "default:standup", sfu: janusA)
        let secret = keys.roomSecret(room)
        XCTAssertEqual(secret.count, 48)
        XCTAssertEqual(secret, keys.roomSecret(room))
        XCTAssertNotEqual(secret, keys.roomSecret(room + 1))
        let alice = keys.token(room: room, session: SessionID("s-alice"))
        XCTAssertTrue(alice.hasPrefix(SFURoomKeys.tokenPrefix))
        XCTAssertEqual(alice.count, SFURoomKeys.tokenPrefix.count + 32)
        XCTAssertEqual(alice, keys.token(room: room, session: SessionID("s-alice")))
        XCTAssertNotEqual(alice, keys.token(room: room, session: SessionID("s-bob")))
        XCTAssertNotEqual(alice, keys.token(room: keys.roomID(call: "default:standup", sfu: janusB), session: SessionID("s-alice")), "a new room, new tokens")
        XCTAssertFalse(alice.contains(secret.prefix(16)))
    }
}
