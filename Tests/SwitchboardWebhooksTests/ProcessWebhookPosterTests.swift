import Foundation
import Logging
import Synchronization
import SwitchboardCore
import SwitchboardWebhooks
import XCTest

/// The daemon's poster that makes attempts in the worker process (`switchboard webhook-worker`,
/// the binary `swift build` made) against a real HTTP server on 127.0.0.1.
final class ProcessWebhookPosterTests: XCTestCase {
    private var poster: ProcessWebhookPoster!
    private let servers = WebhookTestServers()
    private let key = Array((0..<32).map { UInt8($0 * 7 % 256) })
    private let now = Date(timeIntervalSince1970: 1_700_000_000)

    /// The `switchboard` executable next to this test build.
    static let executable = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent(".build/debug/switchboard")

    override func setUp() async throws {
        XCTAssertTrue(FileManager.default.isExecutableFile(atPath: Self.executable.path), "build the switchboard product first")
        poster = Self.poster(idle: false)
    }

    /// A poster whose worker runs at idle priority only when `idle`: the mechanics are tested at
    /// normal priority, since a shared machine busy with something else would starve the worker.
    static func poster(idle: Bool) -> ProcessWebhookPoster {
        ProcessWebhookPoster(
            executable: executable, arguments: ["webhook-worker", "--connections-per-host", "4"] + (idle ? [] : ["--no-idle"]),
            respawnInterval: .zero, logger: Logger(label: "test"))
    }

    override func tearDown() async throws {
        poster.shutdown()
        try await servers.stopAll()
    }

    private func server(_ answer: @escaping @Sendable (WebhookTestServer.Request) -> WebhookTestServer.Answer) async throws -> WebhookTestServer {
        try await servers.start(answer)
    }

    private func message(_ seq: Int) -> WebhookMessage {
        WebhookMessage(
            id: "msg_\(seq)", type: .participantJoined, createdAt: now, lane: "default:a", seq: Int64(seq),
            data: .object(["call_cid": .string("default:a"), "seq": .number(Double(seq)), "note": .string("é \"q\"")]))
    }

    private func post(_ message: WebhookMessage, to url: String, timeout: Duration = .seconds(5)) async -> WebhookScheduler.Outcome {
        await withCheckedContinuation { done in
            poster.post(message, to: url, keys: [key], now: now, timeout: timeout) { done.resume(returning: $0) }
        }
    }

    func test_attemptsAreMadeByTheWorkerAndEachAnswerComesBack() async throws {
        let receiver = try await server { request in
            request.uri.hasSuffix("/gone") ? .respond(410) : request.uri.hasSuffix("/fail") ? .respond(500) : .respond(204)
        }
        // Three in flight at once, each answered by number.
        let outcomes = Mutex<[Int: WebhookScheduler.Outcome]>([:])
        let answered = expectation(description: "three answers")
        answered.expectedFulfillmentCount = 3
        for (seq, path) in [(1, "/ok"), (2, "/gone"), (3, "/fail")] {
            poster.post(message(seq), to: receiver.url(path), keys: [key], now: now, timeout: .seconds(5)) { outcome in
                outcomes.withLock { $0[seq] = outcome }
                answered.fulfill()
            }
        }
        await fulfillment(of: [answered], timeout: 20)
        XCTAssertEqual(outcomes.withLock { $0 }, [1: .status(204), 2: .status(410), 3: .status(500)])
        let first = try XCTUnwrap(receiver.requests.first { $0.uri == "/ok" })
        XCTAssertEqual(first.body, message(1).body, "the body's bytes, non-ASCII included")
        XCTAssertEqual(first.headers["webhook-id"], ["msg_1"])
        XCTAssertEqual(first.headers["webhook-timestamp"], ["1700000000"])
        XCTAssertEqual(first.headers["webhook-signature"], [WebhookSignature.headers(id: "msg_1", body: message(1).body, keys: [key], now: now)
            .first { $0.name == "webhook-signature" }?.value ?? "?"])
        let unreachable = await post(message(4), to: "http://127.0.0.1:1/closed", timeout: .seconds(2))
        guard case .failed = unreachable else { return XCTFail("a refused connection fails: \(unreachable)") }
    }

    func test_everyThreadOfTheWorkerRunsUnderSchedIdle() async throws {
        poster.shutdown()
        poster = Self.poster(idle: true)
        let receiver = try await server { _ in .respond(204) }
        let outcome = await post(message(1), to: receiver.url("/ok"), timeout: .seconds(60))
        XCTAssertEqual(outcome, .status(204))
        let pid = try XCTUnwrap(poster.workerPID)
        let policies = try FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/task").map { tid -> Int in
            let stat = try String(contentsOfFile: "/proc/\(pid)/task/\(tid)/stat", encoding: .utf8)
            let fields = stat[stat.index(after: stat.lastIndex(of: ")")!)...].split(separator: " ")
            return Int(fields[38])!  // field 41, the policy (5: SCHED_IDLE)
        }
        XCTAssertGreaterThan(policies.count, 1)
        XCTAssertEqual(Set(policies), [5], "every thread of the worker under SCHED_IDLE")
    }

    func test_aWorkerThatDiesFailsWhatItHeldAndTheNextAttemptStartsAnother() async throws {
        let receiver = try await server { _ in .never }
        let outcomes = Mutex<[WebhookScheduler.Outcome]>([])
        let ended = expectation(description: "both held attempts end")
        ended.expectedFulfillmentCount = 2
        for seq in 1...2 {
            poster.post(message(seq), to: receiver.url("/hold"), keys: [key], now: now, timeout: .seconds(30)) { outcome in
                outcomes.withLock { $0.append(outcome) }
                ended.fulfill()
            }
        }
        while receiver.requests.count < 2 { try await Task.sleep(for: .milliseconds(5)) }
        let first = try XCTUnwrap(poster.workerPID)
        XCTAssertEqual(kill(first, SIGKILL), 0)
        await fulfillment(of: [ended], timeout: 10)
        XCTAssertEqual(outcomes.withLock { $0 }, [.failed("the delivery worker ended"), .failed("the delivery worker ended")])

        let answering = try await server { _ in .respond(200) }
        let outcome = await post(message(3), to: answering.url("/ok"))
        XCTAssertEqual(outcome, .status(200))
        let second = try XCTUnwrap(poster.workerPID)
        XCTAssertNotEqual(second, first, "a new worker")
    }

    func test_afterShutdownTheWorkerHasExitedAndAttemptsFail() async throws {
        let receiver = try await server { _ in .respond(204) }
        let outcome = await post(message(1), to: receiver.url("/ok"))
        XCTAssertEqual(outcome, .status(204))
        let pid = try XCTUnwrap(poster.workerPID)
        poster.shutdown()
        XCTAssertEqual(kill(pid, 0), -1, "the worker exited and was reaped")
        let after = await post(message(2), to: receiver.url("/ok"))
        XCTAssertEqual(after, .failed("webhook delivery is stopping"))
    }

    /// A worker that never answers (here `sleep`): its attempt fails at the first sweep past its
    /// timeout and grace, on the poster's clock, and not before.
    func test_anAttemptTheWorkerDoesNotAnswerFailsAtTheSweepPastItsDeadline() async throws {
        let clock = Mutex<UInt64>(1_000_000_000)
        let silent = ProcessWebhookPoster(
            executable: URL(fileURLWithPath: "/bin/sleep"), arguments: ["600"], respawnInterval: .zero, answerGrace: .milliseconds(500),
            sweepInterval: .seconds(3600), clock: { clock.withLock { $0 } }, logger: Logger(label: "test"))
        let outcome = Mutex<WebhookScheduler.Outcome?>(nil)
        silent.post(message(1), to: "http://127.0.0.1:9/never", keys: [key], now: now, timeout: .seconds(2)) { answer in
            outcome.withLock { $0 = answer }
        }
        let pid = try XCTUnwrap(silent.workerPID)
        clock.withLock { $0 += 2_499_000_000 }
        silent.sweep()
        XCTAssertNil(outcome.withLock { $0 }, "1 ms before the deadline (timeout 2 s + grace 0.5 s)")
        clock.withLock { $0 += 1_000_000 }
        silent.sweep()
        XCTAssertEqual(outcome.withLock { $0 }, .failed("the delivery worker did not answer within 2.5 seconds"))
        silent.shutdown(wait: .milliseconds(50))
        XCTAssertEqual(kill(pid, 0), -1, "the silent worker was ended and reaped")
    }

    /// The worker is spawned from a thread that blocks most signals, and a blocked mask survives
    /// exec: it unblocks them, so SIGTERM (systemd's stop, an operator's kill) ends it.
    func test_sigtermEndsTheWorkerAndWhatItHeldFails() async throws {
        let receiver = try await server { _ in .never }
        let ended = expectation(description: "the held attempt ends")
        let outcome = Mutex<WebhookScheduler.Outcome?>(nil)
        poster.post(message(1), to: receiver.url("/hold"), keys: [key], now: now, timeout: .seconds(30)) { answer in
            outcome.withLock { $0 = answer }
            ended.fulfill()
        }
        while receiver.requests.isEmpty { try await Task.sleep(for: .milliseconds(5)) }
        let pid = try XCTUnwrap(poster.workerPID)
        let status = try String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8)
        let blocked = try XCTUnwrap(status.split(separator: "\n").first { $0.hasPrefix("SigBlk:") }).split(separator: "\t").last.map(String.init)
        XCTAssertEqual(UInt64(blocked ?? "", radix: 16).map { $0 & (1 << (UInt64(SIGTERM) - 1)) }, 0, "SIGTERM not blocked in the worker's main thread")
        XCTAssertEqual(kill(pid, SIGTERM), 0)
        await fulfillment(of: [ended], timeout: 10)
        XCTAssertEqual(outcome.withLock { $0 }, .failed("the delivery worker ended"))
    }
}
