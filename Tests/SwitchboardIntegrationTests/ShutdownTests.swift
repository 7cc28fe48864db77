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

    func test_aStuckServiceThreadFailsReadinessAndDoesNotHoldUpShutdown() throws {
        let daemon = try TestDaemon(["shutdown.drain_timeout_ms": .int(500)])
        daemon.daemon.watchdogThreshold = .milliseconds(300)
        let ready = try daemon.admin("GET", "/readyz")
        XCTAssertEqual(ready.status, 200)
        XCTAssertTrue(ready.text.contains(#""threads_turning":true"#), ready.text)

        // Thread 0 serves the client port; the admin port has a thread of its own.
        let release = DispatchSemaphore(value: 0)
        defer { release.signal() }
        daemon.daemon.stallServiceThreadForTesting(0, until: release)
        var stalled = try daemon.admin("GET", "/readyz")
        let deadline = ContinuousClock.now + .seconds(5)
        while stalled.status == 200, ContinuousClock.now < deadline {
            Thread.sleep(forTimeInterval: 0.05)  // polling the watchdog, bounded by the deadline
            stalled = try daemon.admin("GET", "/readyz")
        }
        XCTAssertEqual(stalled.status, 503)
        XCTAssertTrue(stalled.text.contains(#""threads_turning":false"#), stalled.text)
        XCTAssertEqual(daemon.daemon.stalledThreads(), [0])

        let started = ContinuousClock.now
        daemon.daemon.shutdown()
        XCTAssertLessThan(ContinuousClock.now - started, .seconds(5), "shutdown waits a bounded time for a stuck thread")
        XCTAssertEqual(daemon.daemon.stuckThreads, [0])
    }
}
