import Foundation
import Logging
import SwitchboardApp
import SwitchboardCore
import SwitchboardTesting
import XCTest

/// What the room reconciler reads from the call hub: the rooms live calls on Janus SFUs want,
/// with their sessions, and a kick after each commit that changes them.
final class CallHubRoomsTests: XCTestCase {
    private let transport = InMemoryTransport()
    private let logger = Logger(label: "test", factory: { _ in SwiftLogNoOpLogHandler() })
    private let keys = SFURoomKeys(key: Array(repeating: 9, count: 32))!
    private var hub: CallHub!
    private var serial: UInt64 = 0

    override func setUpWithError() throws {
        let directory = try SFUDirectory(
            store: InMemorySFUStore(), policy: PlacementPolicy(staleAfter: .seconds(10)),
            resolver: LocationResolver(regions: RegionTable.builtin.points, fallback: RegionTable.builtin.point(of: "fra")!),
            clock: ManualClock(), roomKeys: keys, logger: logger)
        _ = try directory.create(SFUDefinition(
            id: "janus-fra", url: "ws://janus-fra.test:8188/", region: "fra", capacity: 100, kind: "janus",
            janus: JanusDefinition(adminURL: "http://janus-fra.test:7088/admin", adminSecretEnv: "S")))
        directory.polled(directory.pollTargets()[0], SFUPollResult(outcome: .ok, load: 0, at: Date()))
        directory.settle()
        hub = CallHub(
            queue: DispatchQueue(label: "test.calls"), configuration: CallConfiguration(), store: InMemoryCallStore(), placement: directory,
            tokenVerifier: UserIDTokenVerifier(), logger: logger)
        try hub.start(transport: transport)
    }

    override func tearDown() { hub.stop() }

    private func send(_ socket: ConnectionID, _ json: String) {
        hub.queue.sync { hub.receive([.message(socket, Array(json.utf8), isBinary: false)]) }
    }

    private func connect(_ user: String) -> ConnectionID {
        serial += 1
        let socket = ConnectionID(thread: 0, serial: serial)
        hub.connectForTesting(socket, user: user, transport: transport)
        return socket
    }

    func test_joinsAndLeavesOfAJanusCallKickTheReconcilerAndShowInTheDesiredRooms() async throws {
        let kicks = Counter()
        hub.onRoomsChanged { kicks.add() }
        let alice = connect("alice")
        let bob = connect("bob")
        XCTAssertEqual(kicks.value, 0)
        let empty = await hub.desiredRooms()
        XCTAssertEqual(empty, [:])

        send(alice, #"{"id":1,"type":"call.join","data":{"type":"default","id":"standup","create":true}}"#)
        send(bob, #"{"id":2,"type":"call.join","data":{"type":"default","id":"standup"}}"#)
        XCTAssertEqual(kicks.value, 2)
        let rooms = await hub.desiredRooms()
        let room = try XCTUnwrap(rooms[SFUID("janus-fra")!]?.first)
        XCTAssertEqual(room.room, keys.roomID(call: "default:standup", sfu: SFUID("janus-fra")!))
        XCTAssertEqual(room.call, "default:standup")
        XCTAssertEqual(room.publishers, CallTypeSettings.meeting.maxParticipants)
        XCTAssertEqual(room.sessions.count, 2)

        send(bob, #"{"id":3,"type":"call.update_participant","data":{"type":"default","id":"standup","audio":true}}"#)
        send(bob, #"{"id":4,"type":"call.leave","data":{"type":"default","id":"standup"}}"#)
        let afterLeave = await hub.desiredRooms()
        XCTAssertEqual(afterLeave[SFUID("janus-fra")!]?.first?.sessions.count, 1)
        send(alice, #"{"id":5,"type":"call.end","data":{"type":"default","id":"standup"}}"#)
        let afterEnd = await hub.desiredRooms()
        XCTAssertEqual(afterEnd, [:], "an ended call wants no room")
        XCTAssertGreaterThanOrEqual(kicks.value, 4)
    }
}

private final class Counter: @unchecked Sendable {
    private let lock = NSLock()
    private var count = 0
    var value: Int { lock.withLock { count } }
    func add() { lock.withLock { count += 1 } }
}
