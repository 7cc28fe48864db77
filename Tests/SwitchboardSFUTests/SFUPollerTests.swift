import Foundation
import Logging
import SwitchboardCore
import SwitchboardSFU
import SwitchboardTesting
import XCTest

/// The poller: one result per pulled SFU per round, by outcome, reported to the directory's port.
final class SFUPollerTests: XCTestCase {
    private let when = Date(timeIntervalSince1970: 1_800_000_000)
    private var http: ScriptedHTTPPoster!

    override func setUp() { http = ScriptedHTTPPoster() }

    private func target(_ id: String, secret: SecretSource = .environment("JANUS_SECRET")) -> SFUPollTarget {
        SFUPollTarget(id: SFUID(id)!, janus: JanusAccess(adminURL: "http://\(id).test/admin", adminSecret: secret))
    }

    private func poller(_ targets: [SFUPollTarget], reports: Reports, environment: [String: String] = ["JANUS_SECRET": "s3cret\n"]) -> SFUPoller {
        SFUPoller(
            targets: { targets }, report: reports.append,
            janus: JanusAdminClient(http: http, timeout: .milliseconds(200), transactionIDs: { "rec-admin_list_sessions" }),
            secrets: SecretReader(environment: { environment[$0] }, readFile: { _ in nil }), interval: .seconds(1),
            wallClock: { [when] in when }, logger: Logger(label: "test", factory: { _ in SwiftLogNoOpLogHandler() }))
    }

    func test_eachSFUOfARoundGetsItsOwnOutcome() async throws {
        http.answer("http://ok.test/admin", json: try JanusFixtures.body("admin_list_sessions"))
        http.answer("http://refusing.test/admin", json: try JanusFixtures.body("admin_wrong_secret").replacingOccurrences(of: "rec-admin_wrong_secret", with: "rec-admin_list_sessions"))
        http.answer("http://slow.test/admin", with: .error(.timeout))
        // No script for dead.test: connection refused.
        let reports = Reports()
        let targets = [target("ok"), target("refusing"), target("slow"), target("dead"), target("secretless", secret: .environment("UNSET"))]
        let results = await poller(targets, reports: reports).pollOnce()

        XCTAssertEqual(results.map(\.outcome), [.ok, .refused, .timeout, .failed, .noSecret])
        XCTAssertEqual(results.map(\.load), [1, nil, nil, nil, nil])
        XCTAssertEqual(results.map(\.at), Array(repeating: when, count: 5))
        XCTAssertEqual(reports.all.map(\.0.id.rawValue).sorted(), ["dead", "ok", "refusing", "secretless", "slow"], "every result reaches the directory")
        XCTAssertEqual(http.requests.count, 4, "an SFU whose secret cannot be read is not asked")
        XCTAssertEqual(http.requestObject(0)?["admin_secret"] as? String, "s3cret", "the trailing newline of the secret is not sent")
        XCTAssertFalse(results[2].detail?.contains("s3cret") ?? true)
    }

    func test_aSecretFileIsReadAtEachPoll() async throws {
        http.answer("http://ok.test/admin", json: try JanusFixtures.body("admin_list_sessions"))
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("janus-secret-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: file) }
        try "first\n".write(to: file, atomically: true, encoding: .utf8)
        let reports = Reports()
        let polling = SFUPoller(
            targets: { [target = target("ok", secret: .file(file.path))] in [target] }, report: reports.append,
            janus: JanusAdminClient(http: http, timeout: .seconds(1), transactionIDs: { "rec-admin_list_sessions" }),
            interval: .seconds(1), logger: Logger(label: "test", factory: { _ in SwiftLogNoOpLogHandler() }))
        await polling.pollOnce()
        try "rotated".write(to: file, atomically: true, encoding: .utf8)
        await polling.pollOnce()
        XCTAssertEqual([0, 1].map { http.requestObject($0)?["admin_secret"] as? String }, ["first", "rotated"])
    }
}

final class Reports: @unchecked Sendable {
    private let lock = NSLock()
    private var items: [(SFUPollTarget, SFUPollResult)] = []
    var all: [(SFUPollTarget, SFUPollResult)] { lock.withLock { items } }
    func append(_ target: SFUPollTarget, _ result: SFUPollResult) { lock.withLock { items.append((target, result)) } }
}

/// Polls on their own: one Janus that hangs never holds up another's polls, and the real HTTP
/// client reports a refused connection as a failure at once, not as a timeout.
final class SFUPollerIndependenceTests: XCTestCase {
    func test_aHangingSFUDoesNotHoldUpTheOthersPolls() async throws {
        let http = HangingFor(url: "http://hung.test/admin", then: ScriptedHTTPPoster())
        http.inner.answer("http://ok.test/admin", json: try JanusFixtures.body("admin_list_sessions"))
        let reports = Reports()
        let targets = ["ok", "hung"].map { SFUPollTarget(id: SFUID($0)!, janus: JanusAccess(adminURL: "http://\($0).test/admin", adminSecret: .environment("S"))) }
        let poller = SFUPoller(
            targets: { targets }, report: reports.append,
            janus: JanusAdminClient(http: http, timeout: .seconds(60), transactionIDs: { "rec-admin_list_sessions" }),
            secrets: SecretReader(environment: { _ in "s" }), interval: .milliseconds(5),
            logger: Logger(label: "test", factory: { _ in SwiftLogNoOpLogHandler() }))
        poller.start()
        defer { poller.stop() }
        let deadline = ContinuousClock.now + .seconds(20)
        while reports.all.filter({ $0.0.id.rawValue == "ok" }).count < 5, ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(5))  // a polling cadence, not a wait for an outcome
        }
        XCTAssertGreaterThanOrEqual(reports.all.filter { $0.0.id.rawValue == "ok" }.count, 5, "the answering SFU is polled again and again")
        XCTAssertEqual(reports.all.filter { $0.0.id.rawValue == "hung" }.count, 0, "the hung one's single poll is still under way")
        XCTAssertEqual(http.hungRequests, 1, "never two polls in flight for one SFU")
    }

    func test_aRefusedConnectionIsAFailureNotATimeout() async throws {
        let poster = AsyncHTTPPoster()
        defer { poster.shutdown() }
        // Port 1 (tcpmux) on loopback: nothing listens there, the kernel refuses at once.
        do {
            _ = try await poster.post("http://127.0.0.1:1/admin", body: Array("{}".utf8), timeout: .seconds(30))
            XCTFail("nothing listens there")
        } catch {
            guard case .failed = error else { return XCTFail("\(error): a refused connection must fail at once, not wait out the deadline") }
        }
    }
}

/// Answers every URL from `inner`, but `url` never answers until the request is cancelled.
final class HangingFor: HTTPPoster, @unchecked Sendable {
    let url: String
    let inner: ScriptedHTTPPoster
    private let lock = NSLock()
    private var hung = 0
    var hungRequests: Int { lock.withLock { hung } }

    init(url: String, then inner: ScriptedHTTPPoster) {
        self.url = url
        self.inner = inner
    }

    func post(_ url: String, body: [UInt8], timeout: Duration) async throws(HTTPPostError) -> (status: Int, body: [UInt8]) {
        guard url == self.url else { return try await inner.post(url, body: body, timeout: timeout) }
        lock.withLock { hung += 1 }
        try? await Task.sleep(for: .seconds(3600))
        throw .timeout
    }
}
