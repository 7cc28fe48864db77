import Foundation
import Logging
import SwitchboardApp
import SwitchboardCore
import SwitchboardTesting
import XCTest

/// A failover commits the move first and the call's `call.sfu_changed` (with its
/// `sfu.call_moved` webhook) in a later batch of the call hub. A move whose batch never ran (the
/// daemon stopped in between) is announced at the next start, once.
final class CallHubFailoverAnnouncementTests: XCTestCase {
    private let store = InMemoryCallStore()
    private let sfuStore = InMemorySFUStore()
    private let transport = InMemoryTransport()
    private let clock = ManualClock()
    private let logger = Logger(label: "test", factory: { _ in SwiftLogNoOpLogHandler() })
    private var directory: SFUDirectory!
    private var hub: CallHub!

    override func setUpWithError() throws {
        directory = try SFUDirectory(
            store: sfuStore, policy: PlacementPolicy(staleAfter: .seconds(10)),
            resolver: LocationResolver(regions: RegionTable.builtin.points, fallback: RegionTable.builtin.point(of: "fra")!),
            clock: clock, logger: logger)
        for (id, region) in [("sfu-fra", "fra"), ("sfu-ams", "ams")] {
            _ = try directory.create(SFUDefinition(id: id, url: "wss://\(id).example/ws", region: region, capacity: 100, secret: "secret-secret-\(id)"))
            _ = try directory.heartbeat(SFUID(id)!, load: 0, credential: nil, isAdmin: true)
        }
        var configuration = CallConfiguration()
        configuration.webhooks = WebhookRouting(endpoints: [(name: "ops", events: [.sfuCallMoved])])
        hub = CallHub(
            queue: DispatchQueue(label: "test.calls"), configuration: configuration, store: store, placement: directory,
            tokenVerifier: UserIDTokenVerifier(), logger: logger)
        try hub.start(transport: transport)
    }

    override func tearDown() {
        hub.stop()
    }

    /// Alice joins `default:m` near Frankfurt; then Frankfurt stops beating and the directory
    /// moves the call to Amsterdam without telling the hub (no `onReassigned`: the stop).
    private func joinThenFailOverUnheard() throws -> ConnectionID {
        let alice = ConnectionID(thread: 0, serial: 1)
        hub.connectForTesting(alice, user: "alice", transport: transport)
        hub.queue.sync {
            hub.receive([
                .message(
                    alice, Array(#"{"id":1,"type":"call.join","data":{"type":"default","id":"m","create":true,"location":{"region":"fra"}}}"#.utf8),
                    isBinary: false)
            ])
        }
        XCTAssertEqual(directory.placement(of: "default:m")?.sfu.rawValue, "sfu-fra")
        clock.advance(by: .seconds(6))
        _ = try directory.heartbeat(SFUID("sfu-ams")!, load: 0, credential: nil, isAdmin: true)
        clock.advance(by: .seconds(5))
        XCTAssertEqual(directory.checkHealth().map(\.to?.rawValue), ["sfu-ams"])
        XCTAssertEqual(directory.placement(of: "default:m")?.reason, "failover")
        return alice
    }

    private func sfuChangedFrames(to socket: ConnectionID) throws -> [[String: Any]] {
        try transport.drain().compactMap { command -> [String: Any]? in
            guard case .send(let target, let bytes) = command, target == socket else { return nil }
            let frame = try XCTUnwrap(try JSONSerialization.jsonObject(with: Data(bytes)) as? [String: Any])
            return frame["type"] as? String == "call.sfu_changed" ? frame : nil
        }
    }

    func test_aMoveTheHubNeverLoggedIsAnnouncedOnceWithItsWebhook() throws {
        let alice = try joinThenFailOverUnheard()
        _ = transport.drain()
        let cid = CallCID(cid: "default:m")!
        XCTAssertNil(try store.lastEvent(of: cid, type: "call.sfu_changed"), "the stop: nothing logged")

        XCTAssertEqual(hub.announceFailovers(directory.allPlacements(), lookup: directory.current), [cid])
        let logged = try XCTUnwrap(try store.lastEvent(of: cid, type: "call.sfu_changed"))
        XCTAssertEqual(logged.payload["sfu"]?["id"], .string("sfu-ams"))
        XCTAssertEqual(try sfuChangedFrames(to: alice).count, 1, "the participant hears of it")
        let moved = try store.pendingWebhooks().filter { $0.message.type == .sfuCallMoved }
        XCTAssertEqual(moved.map(\.message.lane), ["default:m"])
        XCTAssertEqual(moved.first?.delivery.endpoint, "ops")

        // Announced now: the next start (or a second call) does nothing.
        XCTAssertEqual(hub.announceFailovers(directory.allPlacements(), lookup: directory.current), [])
        XCTAssertEqual(try store.pendingWebhooks().filter { $0.message.type == .sfuCallMoved }.count, 1)
        XCTAssertEqual(try sfuChangedFrames(to: alice).count, 0)
    }

    func test_aMoveTheHubLoggedAndAPlacementThatIsNoFailoverAreLeftAlone() throws {
        _ = try joinThenFailOverUnheard()
        // What the daemon's onReassigned does when nothing stops it.
        hub.sfusReassigned([Reassignment(callID: "default:m", from: SFUID("sfu-fra")!, to: SFUID("sfu-ams")!)], lookup: directory.current)
        XCTAssertEqual(hub.announceFailovers(directory.allPlacements(), lookup: directory.current), [])
        XCTAssertEqual(try store.pendingWebhooks().filter { $0.message.type == .sfuCallMoved }.count, 1)

        var placed = try XCTUnwrap(directory.placement(of: "default:m"))
        placed.reason = "placed"
        XCTAssertTrue(placed.isAnnounced(lastChange: nil), "only a failover's placement waits for an announcement")
        placed.reason = PlacementRecord.failoverReason
        XCTAssertFalse(placed.isAnnounced(lastChange: nil))
        var older = try XCTUnwrap(try store.lastEvent(of: CallCID(cid: "default:m")!, type: "call.sfu_changed"))
        XCTAssertTrue(placed.isAnnounced(lastChange: older))
        older.at = placed.assignedAt.addingTimeInterval(-1)
        XCTAssertFalse(placed.isAnnounced(lastChange: older), "a change from before the move does not announce it")
        placed.sfu = SFUID("sfu-fra")!
        XCTAssertFalse(placed.isAnnounced(lastChange: try store.lastEvent(of: CallCID(cid: "default:m")!, type: "call.sfu_changed")))
    }
}
