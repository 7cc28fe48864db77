import Foundation
import SwitchboardCore
import SwitchboardTesting
import XCTest

/// Time from an SFU's last heartbeat to all its calls reassigned, over real HTTP heartbeats.
/// `scripts/bench placement` runs it with BENCH_FAILOVER_TRIALS=20 and reads the summary line.
final class PlacementFailoverTimingTests: XCTestCase {
    private let token = "admin-token-for-timing"
    private let staleAfter = 1200
    private let heartbeatInterval = 1000

    func test_failoverTimeOverRepeatedTrials() throws {
        let trials = Int(ProcessInfo.processInfo.environment["BENCH_FAILOVER_TRIALS"] ?? "") ?? 3
        let daemon = try TestDaemon(["admin.token": .string(token), "placement.stale_after_ms": .int(staleAfter)])
        let directory = try XCTUnwrap(daemon.daemon.directory)
        let store = try XCTUnwrap(daemon.daemon.store)
        for id in ["sfu-a", "sfu-b"] {
            let body = #"{"id":"\#(id)","url":"wss://\#(id).example/ws","region":"fra","capacity":100000,"secret":"secret-of-\#(id)-0123"}"#
            XCTAssertEqual(try daemon.admin("POST", "/v1/sfus", token: token, body: Array(body.utf8)).status, 201)
        }
        var samples: [Double] = []
        for trial in 0..<trials {
            let (dying, surviving) = trial.isMultiple(of: 2) ? ("sfu-a", "sfu-b") : ("sfu-b", "sfu-a")
            for id in [dying, surviving] { XCTAssertEqual(try beat(daemon, id), 200) }
            let calls = (0..<200).map { "default:t\(trial)-\($0)" }
            for call in calls {
                _ = try directory.place(callID: call, participants: [LocationHint(region: "fra")], commit: store.apply)
            }
            let onDying = calls.filter { directory.placement(of: $0)?.sfu.rawValue == dying }
            let lastBeat = ContinuousClock.now
            let keeper = DispatchSource.makeTimerSource(queue: .global())
            keeper.schedule(deadline: .now(), repeating: .milliseconds(heartbeatInterval))
            keeper.setEventHandler { _ = try? self.beat(daemon, surviving) }
            keeper.resume()
            let moved = poll(until: lastBeat + .seconds(10)) { onDying.allSatisfy { directory.placement(of: $0)?.sfu.rawValue == surviving } }
            keeper.cancel()
            XCTAssertTrue(moved, "trial \(trial): calls did not move")
            let elapsed = ContinuousClock.now - lastBeat
            samples.append(Double(elapsed.nanoseconds) / 1e6)
            XCTAssertLessThanOrEqual(elapsed, .milliseconds(2 * heartbeatInterval), "trial \(trial)")
            let ended = calls.compactMap(CallCID.init(cid:))
            try store.apply(ended.map(CallMutation.deletePlacement))
            directory.adopt(placed: [], released: ended)
        }
        let sorted = samples.sorted()
        let p99 = sorted[min(sorted.count - 1, Int((Double(sorted.count) * 0.99).rounded(.up)) - 1)]
        print(String(
            format: "failover-timing: trials=%d calls_per_trial=200 stale_after_ms=%d heartbeat_ms=%d p50_ms=%.0f p99_ms=%.0f max_ms=%.0f",
            trials, staleAfter, heartbeatInterval, sorted[sorted.count / 2], p99, sorted.last ?? 0))
    }

    private func beat(_ daemon: TestDaemon, _ id: String) throws -> Int {
        try daemon.admin("POST", "/v1/sfus/\(id)/heartbeat", token: "secret-of-\(id)-0123", body: Array(#"{"load":0}"#.utf8)).status
    }

    private func poll(until deadline: ContinuousClock.Instant, _ condition: () -> Bool) -> Bool {
        while ContinuousClock.now < deadline {
            if condition() { return true }
            _ = DispatchSemaphore(value: 0).wait(timeout: .now() + .milliseconds(5))
        }
        return condition()
    }
}
