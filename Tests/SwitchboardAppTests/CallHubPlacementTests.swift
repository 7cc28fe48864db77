import Foundation
import Logging
import SwitchboardApp
import SwitchboardCore
import SwitchboardTesting
import XCTest

/// A call's SFU placement is part of the batch that joins it: one transaction holds it with the
/// session, a failed commit leaves it nowhere, and the end of the call drops it in its batch.
final class CallHubPlacementTests: XCTestCase {
    private let store = InMemoryCallStore()
    private let sfuStore = InMemorySFUStore()
    private let transport = InMemoryTransport()
    private let logger = Logger(label: "test", factory: { _ in SwiftLogNoOpLogHandler() })
    private var directory: SFUDirectory!
    private var hub: CallHub!
    private var serial: UInt64 = 0

    override func setUpWithError() throws {
        directory = try SFUDirectory(
            store: sfuStore, policy: PlacementPolicy(staleAfter: .seconds(10)),
            resolver: LocationResolver(regions: RegionTable.builtin.points, fallback: RegionTable.builtin.point(of: "fra")!),
            clock: ManualClock(), logger: logger)
        _ = try directory.create(SFUDefinition(id: "sfu-fra", url: "wss://sfu-fra.example/ws", region: "fra", capacity: 100, secret: "secret-secret-fra"))
        _ = try directory.heartbeat(SFUID("sfu-fra")!, load: 0, credential: nil, isAdmin: true)
        hub = CallHub(
            queue: DispatchQueue(label: "test.calls"), configuration: CallConfiguration(), store: store, placement: directory,
            tokenVerifier: UserIDTokenVerifier(), logger: logger)
        try hub.start(transport: transport)
    }

    override func tearDown() {
        hub.stop()
    }

    private func connect(_ user: String) -> ConnectionID {
        serial += 1
        let socket = ConnectionID(thread: 0, serial: serial)
        hub.connectForTesting(socket, user: user, transport: transport)
        return socket
    }

    /// Sends one request frame as its own batch and returns the answer's `type` and error code.
    private func request(_ socket: ConnectionID, _ json: String) throws -> (type: String?, code: String?) {
        _ = transport.drain()
        hub.queue.sync { hub.receive([.message(socket, Array(json.utf8), isBinary: false)]) }
        for case .send(let target, let bytes) in transport.drain() where target == socket {
            let frame = try XCTUnwrap(try JSONSerialization.jsonObject(with: Data(bytes)) as? [String: Any])
            if frame["type"] as? String == "response" || frame["type"] as? String == "error" {
                return (frame["type"] as? String, (frame["error"] as? [String: Any])?["code"] as? String)
            }
        }
        return (nil, nil)
    }

    func test_theJoinThatPlacesACallCommitsThePlacementInItsOwnTransaction() throws {
        let alice = connect("alice")
        let commits = store.applyCount
        XCTAssertEqual(try request(alice, #"{"id":1,"type":"call.join","data":{"type":"default","id":"m","create":true}}"#).type, "response")
        XCTAssertEqual(store.applyCount, commits + 1, "session and placement in one commit")
        let batch = try XCTUnwrap(store.appliedBatches.last)
        XCTAssertTrue(batch.contains { if case .savePlacement(let record) = $0 { record.callID == "default:m" } else { false } })
        XCTAssertTrue(batch.contains { if case .saveSession = $0 { true } else { false } })
        XCTAssertEqual(store.committedPlacements[CallCID(cid: "default:m")!]?.sfu.rawValue, "sfu-fra")
        // The directory's queue runs the adoption before this read.
        XCTAssertEqual(directory.placement(of: "default:m")?.sfu.rawValue, "sfu-fra")
        XCTAssertEqual(directory.get(SFUID("sfu-fra")!)?.calls, 1)
    }

    func test_aJoinWhoseCommitFailsLeavesNoPlacementBehind() throws {
        let alice = connect("alice")
        store.failNextApply = true
        XCTAssertEqual(try request(alice, #"{"id":1,"type":"call.join","data":{"type":"default","id":"m","create":true}}"#).code, "unavailable")
        XCTAssertTrue(store.committedPlacements.isEmpty)
        XCTAssertNil(directory.placement(of: "default:m"))
        XCTAssertEqual(directory.get(SFUID("sfu-fra")!)?.calls, 0)
    }

    func test_theBatchThatEndsACallDropsItsPlacement() throws {
        let alice = connect("alice")
        XCTAssertEqual(try request(alice, #"{"id":1,"type":"call.join","data":{"type":"default","id":"m","create":true}}"#).type, "response")
        XCTAssertEqual(try request(alice, #"{"id":2,"type":"call.end","data":{"type":"default","id":"m"}}"#).type, "response")
        XCTAssertTrue(store.committedPlacements.isEmpty)
        XCTAssertTrue(try XCTUnwrap(store.appliedBatches.last).contains(.deletePlacement(CallCID(cid: "default:m")!)))
        XCTAssertNil(directory.placement(of: "default:m"))
    }
}
