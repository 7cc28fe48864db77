import Foundation
import XCTest

@testable import SwitchboardKit

final class EventSequencerTests: XCTestCase {
    func info(resumed: Bool, complete: Bool = true, lastSeq: Int64 = 0) -> ConnectionInfo {
        ConnectionInfo(
            connectionId: "c", userId: "u", expiresAt: 0, resumeToken: "r", resumed: resumed, replayed: 0, replayComplete: complete,
            lastSeq: lastSeq, sessions: [])
    }

    func test_aReplayWithDuplicatesAndAGapDeliversEachEventOnceAndFlagsTheGap() {
        var sequencer = EventSequencer()
        XCTAssertFalse(sequencer.connected(info(resumed: false), hadConnection: false))
        XCTAssertEqual([1, 2, 3].map { sequencer.accept($0) }, [.deliver, .deliver, .deliver])
        // The socket drops after 3; the resume replays 2…5 (2 and 3 already seen), then 7.
        XCTAssertFalse(sequencer.connected(info(resumed: true, lastSeq: 5), hadConnection: true))
        XCTAssertEqual([2, 3, 4, 5, 5, 7, 8].map { sequencer.accept($0) }, [.duplicate, .duplicate, .deliver, .deliver, .duplicate, .gap, .deliver])
        XCTAssertEqual(sequencer.lastSeq, 8)
    }

    func test_anIncompleteReplayOrALostConnectionMeansFetchingAgain() {
        var sequencer = EventSequencer()
        _ = sequencer.accept(1)
        XCTAssertTrue(sequencer.connected(info(resumed: true, complete: false, lastSeq: 1_795_317_001_000_000), hadConnection: true))
        // After a daemon restart seq jumps ahead: delivered (and flagged) rather than dropped.
        XCTAssertEqual(sequencer.accept(1_795_317_001_000_001), .gap)
        XCTAssertEqual(sequencer.accept(1_795_317_001_000_002), .deliver)
        // The resume window passed: a new connection, numbered from its own last_seq.
        XCTAssertTrue(sequencer.connected(info(resumed: false), hadConnection: true))
        XCTAssertEqual(sequencer.lastSeq, 0)
        XCTAssertEqual(sequencer.accept(1), .deliver)
    }
}

final class BackoffTests: XCTestCase {
    func test_delaysGrowExponentiallyUpToTheMaximumWithJitterInside() {
        let backoff = Backoff(base: .milliseconds(100), maximum: .seconds(2), floor: .milliseconds(10))
        XCTAssertEqual((0..<7).map { backoff.ceiling(attempt: $0) }, [100, 200, 400, 800, 1600, 2000, 2000].map { Duration.milliseconds($0) })
        XCTAssertEqual(backoff.delay(attempt: 3, unit: 1), .milliseconds(800))
        XCTAssertEqual(backoff.delay(attempt: 3, unit: 0.5), .milliseconds(400))
        XCTAssertEqual(backoff.delay(attempt: 3, unit: 0), .milliseconds(10), "never below the floor")
        XCTAssertEqual(backoff.delay(attempt: 99, unit: 1), .seconds(2))
        XCTAssertEqual(backoff.delay(attempt: -1, unit: 1), .milliseconds(100))
    }
}

final class ServerFrameTests: XCTestCase {
    func test_framesAreReadByType() throws {
        XCTAssertEqual(try ServerFrame.parse(#"{"id":3,"type":"pong"}"#), .pong(id: 3))
        XCTAssertEqual(try ServerFrame.parse(#"{"data":{"a":1},"id":7,"type":"response"}"#), .response(id: 7, data: ["a": 1]))
        XCTAssertEqual(
            try ServerFrame.parse(#"{"error":{"code":"call_full","message":"full"},"id":2,"type":"error"}"#),
            .error(id: 2, SwitchboardClientError(.callFull, "full")))
        XCTAssertEqual(
            try ServerFrame.parse(#"{"data":{"expires_at":5},"seq":4,"type":"connection.token_expiring"}"#),
            .event(ServerEvent(type: "connection.token_expiring", seq: 4, callCID: nil, data: ["expires_at": 5])))
    }

    func test_unreadableFramesAreProtocolErrors() {
        for text in ["not json", "[1]", #"{"id":1}"#, #"{"type":"call.ring","data":{}}"#, #"{"type":"connection.ok","data":{"user_id":"a"}}"#] {
            XCTAssertThrowsError(try ServerFrame.parse(text), text) { error in
                XCTAssertEqual((error as? SwitchboardClientError)?.code, .protocolError, text)
            }
        }
    }

    func test_customDataKeepsItsKeysAndRequestsAreOneLine() throws {
        let call = try Wire.decode(
            CallInfo.self,
            from: try JSONDecoder().decode(
                JSONValue.self,
                from: Data(
                    #"{"cid":"default:x","created_at":1,"created_by":"a","custom":{"snake_key":{"inner_key":1}},"dominant_speaker":null,"ended_at":null,"ended_reason":null,"id":"x","ringing":false,"session":1,"sfu":null,"type":"default"}"#
                        .utf8)))
        XCTAssertEqual(call.custom["snake_key"]?["inner_key"], 1)
        XCTAssertEqual(Wire.request(type: "ping", id: 3, data: [:]), #"{"data":{},"id":3,"type":"ping"}"#)
    }

    func test_tokensNeverPrint() {
        let token = UserToken(rawValue: "eyJhbGciOi.secret.sig")
        XCTAssertFalse("\(token)".contains("secret"))
        XCTAssertFalse(String(reflecting: token).contains("secret"))
    }
}

final class TokenRefreshTests: XCTestCase {
    final class Counter: @unchecked Sendable {
        let lock = NSLock()
        var calls = 0
        func next() -> Int { lock.withLock { calls += 1; return calls } }
    }

    func client(_ provider: @escaping @Sendable () async throws -> UserToken, attempts: Int = 3) -> SwitchboardClient {
        SwitchboardClient(
            url: URL(string: "ws://127.0.0.1:1/v1/connect")!, user: UserInfo(id: "alice"), token: UserToken(rawValue: "old"),
            config: ClientConfig(backoff: Backoff(base: .milliseconds(1), maximum: .milliseconds(2), floor: .milliseconds(1)), tokenProviderAttempts: attempts),
            tokenProvider: provider, random: { 0.5 })
    }

    func test_concurrentExpiriesAskTheProviderOnce() async throws {
        let counter = Counter()
        let gate = AsyncStream<Void>.makeStream()
        let client = client {
            let call = counter.next()
            for await _ in gate.stream { break }
            return UserToken(rawValue: "new-\(call)")
        }
        async let first = client.freshToken()
        async let second = client.freshToken()
        async let third = client.freshToken()
        // All three are waiting on the one provider call.
        while counter.lock.withLock({ counter.calls }) == 0 { await Task.yield() }
        try await Task.sleep(for: .milliseconds(20))
        gate.continuation.yield()
        let results = await [first, second, third]
        XCTAssertEqual(results.map { try? $0.get().rawValue }, ["new-1", "new-1", "new-1"])
        XCTAssertEqual(counter.calls, 1)
        let token = await client.token
        XCTAssertEqual(token.rawValue, "new-1")
        // The next expiry asks again.
        gate.continuation.yield()
        _ = await client.freshToken()
        XCTAssertEqual(counter.calls, 2)
    }

    func test_aFailingProviderIsRetriedThenTerminal() async {
        struct Down: Error {}
        let counter = Counter()
        let client = client({
            _ = counter.next()
            throw Down()
        }, attempts: 4)
        let result = await client.freshToken()
        guard case .failure(let error) = result else { return XCTFail("the provider never succeeds") }
        XCTAssertEqual(error.code, .tokenProviderFailed)
        XCTAssertEqual(counter.calls, 4)
        let token = await client.token
        XCTAssertEqual(token.rawValue, "old", "the old token stays")
    }

    func test_theURLGetsTheConnectPath() {
        XCTAssertEqual(SwitchboardClient.connectURL(URL(string: "http://h:9000")!).absoluteString, "ws://h:9000/v1/connect")
        XCTAssertEqual(SwitchboardClient.connectURL(URL(string: "https://h")!).absoluteString, "wss://h/v1/connect")
        XCTAssertEqual(SwitchboardClient.connectURL(URL(string: "ws://h:1/custom")!).absoluteString, "ws://h:1/custom")
    }
}
