import SwitchboardTesting
import XCTest

final class ShutdownTests: XCTestCase {
    func test_shutdownClosesEveryPeerWith1001AndStopsAccepting() throws {
        let daemon = try TestDaemon()
        let alice = try daemon.peer(id: "alice")
        let bob = try daemon.peer(id: "bob")
        let port = daemon.port
        let done = expectation(description: "shutdown returned")
        let server = daemon.daemon
        DispatchQueue.global().async {
            server.shutdown()
            done.fulfill()
        }
        XCTAssertEqual(try alice.awaitClose(), 1001)
        XCTAssertEqual(try bob.awaitClose(), 1001)
        wait(for: [done], timeout: 10)
        XCTAssertThrowsError(try WebSocketTestClient.connect(port: port, path: "/peerjs?key=peerjs&id=c&token=t"))
    }

    func test_shutdownFinishesWithinTheDrainTimeoutWhenAClientIgnoresTheClose() throws {
        let daemon = try TestDaemon(["shutdown.drain_timeout_ms": .int(500)])
        let stubborn = try daemon.peer(id: "stubborn")
        let started = ContinuousClock.now
        daemon.daemon.shutdown()
        XCTAssertLessThan(ContinuousClock.now - started, .seconds(8))
        _ = stubborn
    }
}
