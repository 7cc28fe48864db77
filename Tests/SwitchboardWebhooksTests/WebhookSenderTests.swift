import Crypto
import Foundation
import SwitchboardCore
import SwitchboardWebhooks
import XCTest

/// The webhook sender against a real HTTP server on 127.0.0.1: what it sends, how each kind of
/// answer (or its absence) is reported.
final class WebhookSenderTests: XCTestCase {
    private var sender: WebhookSender!
    private let servers = WebhookTestServers()
    private let current = Array((0..<32).map { UInt8($0 * 3 % 256) })
    private let previous = Array(repeating: UInt8(0x5A), count: 24)
    private let now = Date(timeIntervalSince1970: 1_700_000_000.75)

    private let message = WebhookMessage(
        id: "msg_01HZX", type: .callEnded, createdAt: Date(timeIntervalSince1970: 1_699_999_999.5), lane: "default:standup", seq: 7,
        data: .object(["call_cid": .string("default:standup"), "seq": .number(7), "reason": .string("héllo \"quoted\"")]))

    override func setUp() async throws {
        sender = WebhookSender(connectTimeout: .seconds(2))
    }

    override func tearDown() async throws {
        await sender.shutdown()
        try await servers.stopAll()
    }

    private func server(_ answer: @escaping @Sendable (WebhookTestServer.Request) -> WebhookTestServer.Answer) async throws -> WebhookTestServer {
        try await servers.start(answer)
    }

    private func send(to url: String, secrets: [[UInt8]]? = nil, timeout: Duration = .seconds(5)) async -> WebhookScheduler.Outcome {
        await sender.send(message, to: url, secrets: secrets ?? [current], now: now, timeout: timeout)
    }

    /// The test's own Standard Webhooks check: some `v1,` signature is the HMAC-SHA256 of
    /// `id.timestamp.body` under `key`.
    private func verifies(_ header: String, id: String, timestamp: String, body: [UInt8], key: [UInt8]) -> Bool {
        let mac = HMAC<SHA256>.authenticationCode(for: Array("\(id).\(timestamp).".utf8) + body, using: SymmetricKey(data: key))
        return header.split(separator: " ").contains { $0 == "v1," + Data(mac).base64EncodedString() }
    }

    func test_postsTheBodySignedWithTheStandardWebhooksHeaders() async throws {
        let receiver = try await server { _ in .respond(200, body: Array("ok".utf8)) }
        let outcome = await send(to: receiver.url("/hooks/switchboard?team=ops"), secrets: [current, previous])
        XCTAssertEqual(outcome, .status(200))
        let request = try XCTUnwrap(receiver.requests.first)
        XCTAssertEqual(receiver.requests.count, 1)
        XCTAssertEqual(request.method, .POST)
        XCTAssertEqual(request.uri, "/hooks/switchboard?team=ops")
        XCTAssertEqual(request.headers["content-type"], ["application/json"])
        XCTAssertEqual(request.headers["user-agent"], ["Switchboard-Webhooks/1"])
        XCTAssertEqual(request.headers["webhook-id"], ["msg_01HZX"])
        XCTAssertEqual(request.headers["webhook-timestamp"], ["1700000000"])
        XCTAssertEqual(request.body, message.body)
        let body = try XCTUnwrap(try JSONSerialization.jsonObject(with: Data(request.body)) as? [String: Any])
        XCTAssertEqual(body["type"] as? String, "call.ended")
        XCTAssertEqual(body["created_at"] as? Double, 1_699_999_999_500)
        XCTAssertEqual((body["data"] as? [String: Any])?["seq"] as? Double, 7)

        let signature = try XCTUnwrap(request.headers["webhook-signature"].first)
        XCTAssertEqual(signature.split(separator: " ").count, 2, "current and previous key during a rotation")
        XCTAssertTrue(signature.split(separator: " ").allSatisfy { $0.hasPrefix("v1,") })
        for key in [current, previous] {
            XCTAssertTrue(verifies(signature, id: "msg_01HZX", timestamp: "1700000000", body: request.body, key: key))
        }
        XCTAssertFalse(verifies(signature, id: "msg_01HZX", timestamp: "1700000001", body: request.body, key: current))
        XCTAssertFalse(verifies(signature, id: "msg_01HZX", timestamp: "1700000000", body: request.body, key: Array(repeating: 1, count: 32)))
    }

    func test_theSameMessageIsSentWithTheSameIdAndBodyOnEveryAttempt() async throws {
        let receiver = try await server { _ in .respond(500) }
        _ = await send(to: receiver.url("/"))
        _ = await sender.send(message, to: receiver.url("/"), secrets: [current], now: now.addingTimeInterval(60), timeout: .seconds(5))
        let requests = receiver.requests
        XCTAssertEqual(requests.count, 2)
        XCTAssertEqual(requests.map { $0.headers["webhook-id"] }, [["msg_01HZX"], ["msg_01HZX"]])
        XCTAssertEqual(requests[0].body, requests[1].body)
        XCTAssertEqual(requests.map { $0.headers["webhook-timestamp"] }, [["1700000000"], ["1700000060"]], "signed at each attempt's time")
        XCTAssertNotEqual(requests[0].headers["webhook-signature"], requests[1].headers["webhook-signature"])
    }

    func test_eachStatusIsReportedAsItIs() async throws {
        let receiver = try await server { request in
            .respond(Int(request.uri.dropFirst()) ?? 400, body: Array(repeating: UInt8(ascii: "e"), count: 200))
        }
        for status in [200, 204, 299, 400, 410, 429, 500, 503] {
            let outcome = await send(to: receiver.url("/\(status)"))
            XCTAssertEqual(outcome, .status(status))
        }
        XCTAssertEqual(receiver.requests.count, 8, "one request per attempt, none retried by the client")
    }

    func test_aRedirectIsTheAnswerAndIsNotFollowed() async throws {
        let receiver = try await server { request in
            request.uri == "/moved" ? .respond(200) : .respond(302, headers: [("location", "/moved")])
        }
        for status in [301, 302, 307, 308] {
            let target = try await server { _ in .respond(status, headers: [("location", receiver.url("/moved"))]) }
            let outcome = await send(to: target.url("/hook"))
            XCTAssertEqual(outcome, .status(status))
            XCTAssertEqual(target.requests.map(\.uri), ["/hook"])
        }
        let redirected = await send(to: receiver.url("/hook"))
        XCTAssertEqual(redirected, .status(302))
        XCTAssertEqual(receiver.requests.map(\.uri), ["/hook"], "the location was never requested")
    }

    func test_aServerThatNeverAnswersIsAFailureWithinTheTimeout() async throws {
        let receiver = try await server { _ in .never }
        let outcome = await send(to: receiver.url("/slow"), timeout: .milliseconds(300))
        guard case .failed(let reason) = outcome else { return XCTFail("expected a failure, got \(outcome)") }
        XCTAssertTrue(reason.contains("timed out"), reason)
        XCTAssertEqual(receiver.requests.count, 1, "the request did arrive")
    }

    func test_aConnectionClosedMidRequestIsAFailure() async throws {
        let receiver = try await server { _ in .closeMidRequest }
        let outcome = await send(to: receiver.url("/closing"))
        guard case .failed(let reason) = outcome else { return XCTFail("expected a failure, got \(outcome)") }
        XCTAssertFalse(reason.isEmpty)
    }

    func test_aRefusedConnectionIsAFailure() async throws {
        let gone = try await WebhookTestServer.start { _ in .respond(200) }
        let url = gone.url("/")
        try await gone.stop()
        let outcome = await send(to: url, timeout: .seconds(5))
        guard case .failed(let reason) = outcome else { return XCTFail("expected a failure, got \(outcome)") }
        XCTAssertFalse(reason.contains("timed out"), "refused at once, not retried until the deadline: \(reason)")
    }

    func test_anAnswerWhoseBodyStallsOrIsLongStillCountsByItsStatus() async throws {
        let stalling = try await server { _ in .stallInBody(200) }
        let outcome = await send(to: stalling.url("/"), timeout: .milliseconds(300))
        XCTAssertEqual(outcome, .status(200), "the answer's head arrived; its body is not waited for past the timeout")
        let long = try await server { _ in .respond(500, body: Array(repeating: UInt8(ascii: "z"), count: 1 << 20)) }
        let longOutcome = await send(to: long.url("/"))
        XCTAssertEqual(longOutcome, .status(500))
        let next = await send(to: long.url("/"))
        XCTAssertEqual(next, .status(500), "the next attempt works after a body was cut short")
    }

    func test_withoutASecretNothingIsSent() async throws {
        let receiver = try await server { _ in .respond(200) }
        let outcome = await send(to: receiver.url("/"), secrets: [])
        XCTAssertEqual(outcome, .failed("no signing secret"))
        XCTAssertEqual(receiver.requests.count, 0)
    }

    func test_aURLThatIsNotHTTPIsAFailure() async throws {
        for url in ["not a url", "ftp://127.0.0.1/hook", ""] {
            let outcome = await send(to: url)
            guard case .failed = outcome else { return XCTFail("\(url): expected a failure, got \(outcome)") }
        }
    }
}
