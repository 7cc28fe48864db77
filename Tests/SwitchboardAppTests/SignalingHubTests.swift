import Logging
import SwitchboardApp
import SwitchboardCore
import SwitchboardTesting
import XCTest

/// The hub with its in-memory transport twin and a manual clock: no sockets, no sleeping.
final class SignalingHubTests: XCTestCase {
    private var transport: InMemoryTransport!
    private var clock: ManualClock!
    private var hub: SignalingHub!

    private let alice = ConnectionID(thread: 0, serial: 1)
    private let bob = ConnectionID(thread: 0, serial: 2)

    override func setUp() {
        transport = InMemoryTransport()
        clock = ManualClock()
        hub = SignalingHub(
            relay: RelayConfiguration(expireTimeout: .seconds(5)), routes: PeerJSRoutes(mountPath: "/"),
            clock: clock, newPeerID: { "fresh-id" }, logger: Logger(label: "test", factory: { _ in SwiftLogNoOpLogHandler() }))
        hub.start(transport: transport)
    }

    override func tearDown() { hub.stop() }

    private func open(_ connection: ConnectionID, id: String) {
        hub.transportDidReceive([.opened(connection, WebSocketUpgrade(path: "/peerjs", query: ["key": "peerjs", "id": id, "token": "t"]))])
    }

    private func text(_ string: String) -> [UInt8] { Array(string.utf8) }

    func test_aBatchOfEventsIsAnsweredInOneSubmissionThenReportedHandled() {
        let batch: [TransportEvent] = [
            .opened(alice, WebSocketUpgrade(path: "/peerjs", query: ["key": "peerjs", "id": "a", "token": "t"])),
            .opened(bob, WebSocketUpgrade(path: "/peerjs", query: ["key": "peerjs", "id": "b", "token": "t"])),
            .message(alice, text(#"{"type":"OFFER","dst":"b","payload":1}"#), isBinary: false),
        ]
        hub.transportDidReceive(batch)
        _ = hub.withRelay { $0.socketCount }  // the batch is done once the queue gets here
        XCTAssertEqual(transport.processedEvents, batch, "the transport may read those sockets again")
        let commands = transport.waitForCommands(count: 3)
        XCTAssertEqual(commands, [
            .send(alice, text(#"{"type":"OPEN"}"#)),
            .send(bob, text(#"{"type":"OPEN"}"#)),
            .send(bob, text(#"{"type":"OFFER","src":"a","dst":"b","payload":1}"#)),
        ])
    }

    func test_aRefusedDeliveryClosesTheDestinationAndSendsLeaveToTheSender() {
        open(alice, id: "a")
        open(bob, id: "b")
        _ = transport.waitForCommands(count: 2)
        transport.markFull(bob)
        _ = transport.drain()
        hub.transportDidReceive([.message(alice, text(#"{"type":"OFFER","dst":"b","payload":1}"#), isBinary: false)])
        let commands = transport.waitForCommands(count: 2)
        XCTAssertEqual(commands, [
            .close(bob, .policyViolation, reason: "outbox full"),
            .send(alice, text(#"{"type":"LEAVE","src":"b","dst":"a"}"#)),
        ])
        XCTAssertFalse(hub.withRelay { $0.isRegistered(PeerID("b")!) })
    }

    func test_theSweepExpiresQueuedMessagesWhenTheClockPassesExpireTimeout() {
        open(alice, id: "a")
        hub.transportDidReceive([.message(alice, text(#"{"type":"OFFER","dst":"ghost","payload":1}"#), isBinary: false)])
        // withRelay runs after the batches already handed over: the message is queued now.
        XCTAssertEqual(hub.withRelay { $0.queueDepth.messages }, 1)
        _ = transport.drain()
        clock.advance(by: .milliseconds(4999))
        hub.sweepNow()
        XCTAssertEqual(transport.commands, [])
        clock.advance(by: .milliseconds(1))
        hub.sweepNow()
        XCTAssertEqual(transport.commands, [.send(alice, text(#"{"type":"EXPIRE","src":"ghost","dst":"a"}"#))])
    }

    func test_whileDrainingNewSocketsAreClosedWith1001() {
        hub.beginDraining()
        open(alice, id: "a")
        XCTAssertEqual(transport.waitForCommands(count: 1), [.close(alice, .goingAway, reason: "server is draining")])
    }

    func test_httpRequestsAreAnsweredAndUnknownPathsGetA404() {
        hub.transportDidReceive([
            .request(alice, HTTPRequest(method: "GET", path: "/peerjs/id")),
            .request(bob, HTTPRequest(method: "GET", path: "/")),
        ])
        let commands = transport.waitForCommands(count: 2)
        guard case .respond(alice, let id) = commands.first, case .respond(bob, let info) = commands.last else {
            return XCTFail("expected two responses, got \(commands)")
        }
        XCTAssertEqual(id.body, text("fresh-id"))
        XCTAssertEqual(info.status, 200)
    }
}
