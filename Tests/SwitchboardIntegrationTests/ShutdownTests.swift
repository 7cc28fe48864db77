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

/// The daemon's own keep-alive pings (ADR 0007): a client that answers stays, one that does not
/// is dropped after two intervals of silence.
final class KeepAliveTests: XCTestCase {
    func test_aClientThatAnswersPingsStaysAndOneThatDoesNotIsDropped() throws {
        let daemon = try TestDaemon(["transport.ping_interval_ms": .int(1000)])
        let lively = try daemon.peer(id: "lively")
        let silent = try daemon.peer(id: "silent")
        silent.answersPings = false

        // Over 3.5 intervals: lively answers every ping and is never closed.
        let until = ContinuousClock.now + .milliseconds(3500)
        do {
            let frame = try lively.next(timeout: until - ContinuousClock.now)
            XCTFail("lively got \(frame)")
        } catch {
            XCTAssertTrue("\(error)".contains("timed out"), "lively: \(error)")
        }
        XCTAssertGreaterThanOrEqual(lively.pingsReceived, 2, "pinged about once an interval of silence")

        // silent was pinged, did not answer, and was dropped within two intervals and a tick.
        do {
            if case .text(let text) = try silent.next(timeout: .seconds(1)) { XCTFail("silent got \(text)") }
        } catch {
            XCTAssertFalse("\(error)".contains("timed out"), "silent is still open: \(error)")
        }
        XCTAssertGreaterThanOrEqual(silent.pingsReceived, 1)

        let peers = try daemon.admin("GET", "/v1/peers").text
        XCTAssertTrue(peers.contains(#""lively""#), peers)
        XCTAssertFalse(peers.contains(#""silent""#), peers)
    }
}
