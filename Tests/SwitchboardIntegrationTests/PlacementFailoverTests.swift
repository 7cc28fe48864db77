import Foundation
import SwitchboardCore
import SwitchboardTesting
import XCTest

/// SFUs registered and heartbeating over real HTTP on the admin port; one stops; its calls move.
final class PlacementFailoverTests: XCTestCase {
    private let token = "admin-token-for-tests"
    private let heartbeatInterval = Duration.milliseconds(1000)

    private func json(_ response: HTTPTestClient.Response) -> [String: Any] { response.json as? [String: Any] ?? [:] }

    private func register(_ daemon: TestDaemon, id: String, region: String) throws {
        let body = #"{"id":"\#(id)","url":"wss://\#(id).example.net/ws","region":"\#(region)","capacity":1000,"secret":"secret-of-\#(id)-0123"}"#
        let response = try daemon.admin("POST", "/v1/sfus", token: token, body: Array(body.utf8))
        XCTAssertEqual(response.status, 201, response.text)
    }

    private func heartbeat(_ daemon: TestDaemon, id: String, load: Int = 0) throws -> Int {
        try daemon.admin("POST", "/v1/sfus/\(id)/heartbeat", token: "secret-of-\(id)-0123", body: Array(#"{"load":\#(load)}"#.utf8)).status
    }

    func test_anSFUThatStopsHeartbeatingLosesItsCallsWithinTwoHeartbeatIntervals() throws {
        let daemon = try TestDaemon(["admin.token": .string(token), "placement.stale_after_ms": .int(1200)])
        try register(daemon, id: "sfu-fra", region: "fra")
        try register(daemon, id: "sfu-lhr", region: "lhr")
        XCTAssertEqual(try heartbeat(daemon, id: "sfu-fra"), 200)
        XCTAssertEqual(try heartbeat(daemon, id: "sfu-lhr"), 200)
        let directory = try XCTUnwrap(daemon.daemon.directory)
        let store = try XCTUnwrap(daemon.daemon.store)
        let calls = (0..<50).map { "default:call-\($0)" }
        for call in calls {
            let placed = try directory.place(callID: call, participants: [LocationHint(region: "fra"), LocationHint(latitude: 48.1, longitude: 11.6)], commit: store.apply)
            XCTAssertEqual(placed.sfu.rawValue, "sfu-fra")
        }
        // London keeps reporting over HTTP; Frankfurt has just sent its last heartbeat.
        let lastFrankfurtBeat = ContinuousClock.now
        let london = DispatchSource.makeTimerSource(queue: .global())
        london.schedule(deadline: .now(), repeating: .milliseconds(Int(heartbeatInterval.milliseconds)))
        london.setEventHandler { _ = try? self.heartbeat(daemon, id: "sfu-lhr", load: 10) }
        london.resume()
        defer { london.cancel() }

        let moved = try poll(until: lastFrankfurtBeat + .seconds(10)) {
            calls.allSatisfy { directory.placement(of: $0)?.sfu.rawValue == "sfu-lhr" }
        }
        XCTAssertTrue(moved, "calls did not move to the healthy SFU")
        let elapsed = ContinuousClock.now - lastFrankfurtBeat
        XCTAssertLessThanOrEqual(elapsed, heartbeatInterval * 2, "reassignment took \(elapsed)")
        print("placement failover: \(calls.count) calls moved \(elapsed) after the last heartbeat (stale_after 1.2 s)")

        let explain = json(try daemon.admin("POST", "/v1/placement/explain", token: token, body: Array(#"{"call_id":"default:call-0"}"#.utf8)))
        XCTAssertEqual(explain["current"] as? String, "sfu-lhr")
        XCTAssertEqual(explain["chosen"] as? String, "sfu-lhr")
        let candidates = explain["candidates"] as? [[String: Any]] ?? []
        XCTAssertEqual(candidates.first { $0["sfu"] as? String == "sfu-fra" }?["rejected"] as? String, "down")
        let sfu = json(try daemon.admin("GET", "/v1/sfus/sfu-fra", token: token))
        XCTAssertEqual(sfu["state"] as? String, "down")
        XCTAssertEqual(sfu["calls"] as? Int, 0)
        let metrics = try daemon.admin("GET", "/metrics", token: token).text
        XCTAssertTrue(metrics.contains("switchboard_reassignments_total 50"), metrics)

        // A heartbeat brings it back; draining keeps its calls but takes no new ones.
        XCTAssertEqual(try heartbeat(daemon, id: "sfu-fra"), 200)
        XCTAssertEqual(json(try daemon.admin("GET", "/v1/sfus/sfu-fra", token: token))["state"] as? String, "active")
        XCTAssertEqual(try daemon.admin("POST", "/v1/sfus/sfu-lhr/drain", token: token).status, 200)
        XCTAssertEqual(directory.placement(of: "default:call-0")?.sfu.rawValue, "sfu-lhr")
        XCTAssertEqual(try directory.place(callID: "default:new", participants: [LocationHint(region: "lhr")], commit: store.apply).sfu.rawValue, "sfu-fra")
    }

    func test_heartbeatsNeedTheSFUSecretOrTheAdminToken() throws {
        let daemon = try TestDaemon(["admin.token": .string(token)])
        try register(daemon, id: "sfu-1", region: "iad")
        let body = Array(#"{"load":3}"#.utf8)
        XCTAssertEqual(try daemon.admin("POST", "/v1/sfus/sfu-1/heartbeat", body: body).status, 401)
        XCTAssertEqual(try daemon.admin("POST", "/v1/sfus/sfu-1/heartbeat", token: "secret-of-sfu-2-0123", body: body).status, 401)
        XCTAssertEqual(try daemon.admin("POST", "/v1/sfus/sfu-1/heartbeat", token: "secret-of-sfu-1-0123", body: body).status, 200)
        XCTAssertEqual(try daemon.admin("POST", "/v1/sfus/sfu-1/heartbeat", token: token, body: body).status, 200)
        XCTAssertEqual(try daemon.admin("POST", "/v1/sfus/nope/heartbeat", token: token, body: body).status, 404)
        XCTAssertEqual(json(try daemon.admin("GET", "/v1/sfus/sfu-1", token: token))["load"] as? Int, 3)
    }

    func test_theLocationTableSurvivesARestart() throws {
        let first = try TestDaemon(["admin.token": .string(token)])
        try register(first, id: "sfu-sin", region: "sin")
        let state = first.stateDirectory.path
        first.daemon.shutdown()
        let second = try TestDaemon(["admin.token": .string(token), "store.directory": .string(state)])
        let sfu = json(try second.admin("GET", "/v1/sfus/sfu-sin", token: token))
        XCTAssertEqual(sfu["region"] as? String, "sin")
        XCTAssertEqual(sfu["has_secret"] as? Bool, true)
        XCTAssertNil(sfu["secret"], "the secret is never returned")
    }

    /// Polls `condition` until it holds or `deadline` passes.
    private func poll(until deadline: ContinuousClock.Instant, _ condition: () -> Bool) throws -> Bool {
        while ContinuousClock.now < deadline {
            if condition() { return true }
            let gate = DispatchSemaphore(value: 0)
            _ = gate.wait(timeout: .now() + .milliseconds(10))
        }
        return condition()
    }
}
