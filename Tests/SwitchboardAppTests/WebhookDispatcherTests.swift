import Foundation
import Logging
import SwitchboardCore
import SwitchboardTesting
import XCTest

@testable import SwitchboardApp

/// The delivery worker against the in-memory store and a scripted poster, time moved by hand:
/// what it sends, what it commits, retries, dead letters, 410, rotation and a restart.
final class WebhookDispatcherTests: XCTestCase {
    private let secret = "whsec_" + Data(repeating: 7, count: 32).base64EncodedString()
    private var clock = ManualWallClock(start: Date(timeIntervalSince1970: 1_800_000_000))
    private var store = InMemoryCallStore()
    private var poster = ScriptedWebhookPoster()

    private func settings(horizon: Duration = .seconds(60), inFlight: Int = 16) -> WebhookSettings {
        WebhookSettings(
            endpoints: [WebhookEndpoint(name: "main", url: "http://receiver.test/hook", secret: secret)], timeout: .seconds(1),
            retryHorizon: horizon, maxBackoff: .seconds(8), maxInFlight: inFlight, rotationGrace: .seconds(30))
    }

    private func dispatcher(_ settings: WebhookSettings? = nil) throws -> WebhookDispatcher {
        let clock = self.clock
        let dispatcher = WebhookDispatcher(
            settings: settings ?? self.settings(), store: store, poster: poster, wallClock: { clock.now() }, random: { 0.5 },
            logger: Logger(label: "test"))
        try dispatcher.start()
        return dispatcher
    }

    /// A committed message of `cid` with `seq`: written to the store, as the call hub does.
    @discardableResult
    private func commit(_ cid: String, _ seq: Int64, _ type: WebhookEventType = .participantJoined) throws -> [PendingWebhook] {
        let message = WebhookMessage(
            id: "msg_\(cid)_\(seq)", type: type, createdAt: clock.now(), lane: cid, seq: seq,
            data: .object(["call_cid": .string(cid), "seq": .number(Double(seq))]))
        let mutation = CallMutation.enqueueWebhook(message, endpoints: ["main"])
        try store.apply([mutation])
        return PendingWebhook.created(by: [mutation])
    }

    private func settle(_ dispatcher: WebhookDispatcher) {
        XCTAssertTrue(dispatcher.waitForIdle(timeout: .now() + .seconds(5)))
        dispatcher.pumpNow()
        XCTAssertTrue(dispatcher.waitForIdle(timeout: .now() + .seconds(5)))
    }

    /// Polls until `condition` holds (attempts run in tasks), failing after 5 s.
    private func waitUntil(_ what: String, _ condition: () -> Bool, file: StaticString = #filePath, line: UInt = #line) {
        let deadline = Date().addingTimeInterval(5)
        while !condition() {
            guard Date() < deadline else { return XCTFail("timed out waiting until \(what)", file: file, line: line) }
            usleep(1000)
        }
    }

    private func status(_ id: String) throws -> WebhookDeliveryStatus? {
        try store.webhook(messageID: id, endpoint: "main")?.delivery.status
    }

    func test_committedMessagesAreSentInEachCallsOrderAndRecordedDelivered() throws {
        let dispatcher = try dispatcher()
        defer { dispatcher.stop() }
        poster.holdsAttempts = true
        var handed = try commit("default:a", 1)
        handed += try commit("default:a", 2)
        handed += try commit("default:b", 1)
        dispatcher.committed(handed)
        dispatcher.pumpNow()
        waitUntil("two attempts are held") { poster.heldCount == 2 }
        XCTAssertEqual(poster.attempts.map(\.messageID).sorted(), ["msg_default:a_1", "msg_default:b_1"], "one attempt per call at a time")
        poster.holdsAttempts = false
        poster.release()
        settle(dispatcher)
        XCTAssertEqual(poster.attempts.map(\.messageID).filter { $0.contains("default:a") }, ["msg_default:a_1", "msg_default:a_2"])
        XCTAssertEqual(try status("msg_default:a_1"), .delivered)
        XCTAssertEqual(try status("msg_default:a_2"), .delivered)
        XCTAssertEqual(try store.pendingWebhooks(), [])
        XCTAssertEqual(poster.attempts.first?.keys, [try WebhookSignature.key(fromSecret: secret)])
    }

    /// Messages another daemon's call hub committed reach this dispatcher only through the
    /// store: a notice (``WebhookDispatcher/storeChanged()``) reads and sends them in each call's
    /// order; one in flight or delivered is not sent again, and a stopped dispatcher reads nothing.
    func test_aNoticeSendsTheMessagesAnotherNodeCommittedOnceEach() throws {
        let dispatcher = try dispatcher()
        defer { dispatcher.stop() }
        try commit("default:a", 1)
        try commit("default:a", 2)
        settle(dispatcher)
        XCTAssertEqual(poster.attempts.count, 0, "not handed over and not read: not known yet")

        poster.holdsAttempts = true
        dispatcher.storeChanged()
        waitUntil("the first is in flight") { poster.heldCount == 1 }
        XCTAssertEqual(poster.attempts.map(\.messageID), ["msg_default:a_1"], "a call's messages one at a time, in order")
        dispatcher.storeChanged()
        dispatcher.storeChanged()
        waitUntil("the reads are done") { !dispatcher.isRefreshing }
        XCTAssertEqual(poster.attempts.count, 1, "the one in flight is not started again by the reads")
        poster.holdsAttempts = false
        poster.release()
        settle(dispatcher)
        XCTAssertEqual(poster.attempts.map(\.messageID), ["msg_default:a_1", "msg_default:a_2"])
        XCTAssertEqual(try store.pendingWebhooks(), [])

        dispatcher.storeChanged()
        settle(dispatcher)
        XCTAssertEqual(poster.attempts.count, 2, "delivered ones are not sent again")

        dispatcher.stop()
        try commit("default:b", 1)
        dispatcher.storeChanged()
        settle(dispatcher)
        XCTAssertEqual(poster.attempts.count, 2, "a stopped dispatcher reads nothing")
    }

    /// The race a read of the store runs: an attempt that ends while the read waits behind the
    /// store's queue is read as pending (its outcome is written after the read) and is not sent again.
    func test_anAttemptThatEndsWhileTheStoreIsReadIsNotSentAgain() throws {
        let dispatcher = try dispatcher()
        defer { dispatcher.stop() }
        poster.holdsAttempts = true
        dispatcher.committed(try commit("default:a", 1))
        waitUntil("the attempt is in flight") { poster.heldCount == 1 }

        let gate = DispatchSemaphore(value: 0)
        dispatcher.commits.async { gate.wait() }
        dispatcher.storeChanged()
        XCTAssertTrue(dispatcher.isRefreshing)
        poster.holdsAttempts = false
        poster.release()
        dispatcher.pumpNow()  // after the answer was taken: the outcome waits behind the read
        gate.signal()
        waitUntil("the read is done") { !dispatcher.isRefreshing }
        settle(dispatcher)
        XCTAssertEqual(poster.attempts.map(\.messageID), ["msg_default:a_1"])
        XCTAssertEqual(try status("msg_default:a_1"), .delivered)
    }

    func test_aFailedAttemptIsRetriedAfterItsBackoffAndAnEndpointGone410IsDisabledUntilEnabled() throws {
        let dispatcher = try dispatcher()
        defer { dispatcher.stop() }
        poster.answer([.status(500), .failed("timed out")])
        dispatcher.committed(try commit("default:a", 1))
        settle(dispatcher)
        XCTAssertEqual(poster.attempts.count, 1)
        let afterFirst = try XCTUnwrap(store.webhook(messageID: "msg_default:a_1", endpoint: "main")?.delivery)
        XCTAssertEqual(afterFirst.attempts, 1)
        XCTAssertEqual(afterFirst.lastStatus, 500)
        XCTAssertEqual(afterFirst.status, .pending)
        // Backoff 1 s × jitter 0.75 (random 0.5): not due 0.7 s later, due at 0.75 s.
        clock.advance(by: .milliseconds(700))
        settle(dispatcher)
        XCTAssertEqual(poster.attempts.count, 1)
        clock.advance(by: .milliseconds(50))
        settle(dispatcher)
        XCTAssertEqual(poster.attempts.count, 2)
        XCTAssertEqual(try store.webhook(messageID: "msg_default:a_1", endpoint: "main")?.delivery.lastError, "timed out")

        poster.answer([.status(410)])
        clock.advance(by: .seconds(2))
        settle(dispatcher)
        XCTAssertEqual(poster.attempts.count, 3)
        XCTAssertNotNil(try store.webhookEndpointStates().first { $0.name == "main" }?.disabledAt, "the 410 is committed")
        XCTAssertNotNil(dispatcher.endpointViews().first?.disabledAt)
        dispatcher.committed(try commit("default:b", 1))
        clock.advance(by: .seconds(60))
        settle(dispatcher)
        XCTAssertEqual(poster.attempts.count, 3, "nothing is sent to a disabled endpoint")
        XCTAssertEqual(dispatcher.endpointViews().first?.pending, 2)

        try dispatcher.enable(endpoint: "main")
        settle(dispatcher)
        XCTAssertEqual(Set(poster.attempts.dropFirst(3).map(\.messageID)), ["msg_default:a_1", "msg_default:b_1"])
        XCTAssertNil(try store.webhookEndpointStates().first { $0.name == "main" }?.disabledAt)
        XCTAssertThrowsError(try dispatcher.enable(endpoint: "main")) { XCTAssertEqual(($0 as? SwitchboardError)?.code, .conflict) }
    }

    func test_pastTheHorizonADeliveryIsDeadTheCallMovesOnAndAnAdminRetrySendsItAgain() throws {
        let dispatcher = try dispatcher(settings(horizon: .seconds(3)))
        defer { dispatcher.stop() }
        poster.answer([.status(503), .status(503), .status(503)])
        dispatcher.committed(try commit("default:a", 1) + (try commit("default:a", 2)))
        for _ in 0..<4 {
            settle(dispatcher)
            clock.advance(by: .seconds(1))
        }
        settle(dispatcher)
        XCTAssertEqual(try status("msg_default:a_1"), .dead)
        XCTAssertEqual(try status("msg_default:a_2"), .delivered, "a dead event does not hold up the call's later ones")
        let dead = try store.listDeliveries(WebhookDeliveryQuery(status: .dead))
        XCTAssertEqual(dead.deliveries.map(\.messageID), ["msg_default:a_1"])

        let retried = try dispatcher.retry(messageID: "msg_default:a_1", endpoint: "main")
        XCTAssertEqual(retried.status, .pending)
        settle(dispatcher)
        XCTAssertEqual(try status("msg_default:a_1"), .delivered)
        XCTAssertEqual(poster.attempts.last?.messageID, "msg_default:a_1")
        XCTAssertThrowsError(try dispatcher.retry(messageID: "msg_default:a_1", endpoint: "main")) {
            XCTAssertEqual(($0 as? SwitchboardError)?.code, .conflict)
        }
        XCTAssertThrowsError(try dispatcher.retry(messageID: "msg_nope", endpoint: "main")) {
            XCTAssertEqual(($0 as? SwitchboardError)?.code, .notFound)
        }
    }

    func test_aRotatedSecretSignsWithThePreviousOneUntilTheGraceEndsAndSurvivesARestart() throws {
        var dispatcher = try dispatcher()
        let rotated = try dispatcher.rotateSecret(endpoint: "main", grace: nil)
        XCTAssertTrue(rotated.secret.hasPrefix("whsec_"))
        XCTAssertNotEqual(rotated.secret, secret)
        XCTAssertEqual(rotated.previousUntil, clock.now().addingTimeInterval(30))
        dispatcher.committed(try commit("default:a", 1))
        settle(dispatcher)
        let both = [try WebhookSignature.key(fromSecret: rotated.secret), try WebhookSignature.key(fromSecret: secret)]
        XCTAssertEqual(poster.attempts.last?.keys, both)
        dispatcher.stop()

        // A restart reads the rotation back from the store.
        dispatcher = try self.dispatcher()
        defer { dispatcher.stop() }
        dispatcher.committed(try commit("default:a", 2))
        settle(dispatcher)
        XCTAssertEqual(poster.attempts.last?.keys, both)
        clock.advance(by: .seconds(31))
        dispatcher.committed(try commit("default:a", 3))
        settle(dispatcher)
        XCTAssertEqual(poster.attempts.last?.keys, [try WebhookSignature.key(fromSecret: rotated.secret)])
        XCTAssertThrowsError(try dispatcher.rotateSecret(endpoint: "other", grace: nil)) {
            XCTAssertEqual(($0 as? SwitchboardError)?.code, .notFound)
        }
    }

    /// The operator changes the configured secret after a rotation (say after a leak): at the
    /// next start the configured secret alone signs and the rotated ones are dropped for good.
    /// The same configured secret keeps the rotation; so does a rotation stored without a digest
    /// (made by an earlier version).
    func test_aConfiguredSecretChangedAfterARotationWinsAtTheNextStart() throws {
        var dispatcher = try dispatcher()
        let rotated = try dispatcher.rotateSecret(endpoint: "main", grace: .zero)
        dispatcher.stop()
        dispatcher = try self.dispatcher()
        dispatcher.committed(try commit("default:a", 1))
        settle(dispatcher)
        XCTAssertEqual(poster.attempts.last?.keys, [try WebhookSignature.key(fromSecret: rotated.secret)], "same configuration: the rotation stands")
        dispatcher.stop()

        let changed = "whsec_" + Data(repeating: 9, count: 32).base64EncodedString()
        var settings = settings()
        settings.endpoints[0].secret = changed
        dispatcher = try self.dispatcher(settings)
        dispatcher.committed(try commit("default:a", 2))
        settle(dispatcher)
        XCTAssertEqual(poster.attempts.last?.keys, [try WebhookSignature.key(fromSecret: changed)])
        XCTAssertEqual(try store.webhookEndpointStates(), [WebhookEndpointState(name: "main")], "dropped in the store too")
        dispatcher.stop()

        var legacy = WebhookEndpointState(name: "main", secret: rotated.secret)
        try store.apply([.saveWebhookEndpoint(legacy)])
        dispatcher = try self.dispatcher(settings)
        defer { dispatcher.stop() }
        dispatcher.committed(try commit("default:a", 3))
        settle(dispatcher)
        XCTAssertEqual(poster.attempts.last?.keys, [try WebhookSignature.key(fromSecret: rotated.secret)], "no digest: the rotation stands")
        legacy.configuredDigest = nil
        XCTAssertEqual(try store.webhookEndpointStates(), [legacy])
    }

    func test_aRestartSendsWhatWasPendingWithTheSameIds() throws {
        var dispatcher = try dispatcher()
        poster.holdsAttempts = true
        dispatcher.committed(try commit("default:a", 1) + (try commit("default:a", 2)))
        dispatcher.pumpNow()
        waitUntil("the first attempt is held") { poster.heldCount == 1 }
        XCTAssertEqual(poster.attempts.map(\.messageID), ["msg_default:a_1"])
        // The process dies with the attempt in flight: nothing was recorded.
        dispatcher.stop()
        let crashed = poster
        poster = ScriptedWebhookPoster()
        dispatcher = try self.dispatcher()
        defer {
            dispatcher.stop()
            crashed.holdsAttempts = false
            crashed.release()
        }
        settle(dispatcher)
        settle(dispatcher)
        XCTAssertEqual(poster.attempts.map(\.messageID), ["msg_default:a_1", "msg_default:a_2"])
        XCTAssertEqual(try store.pendingWebhooks(), [])
    }

    func test_deliveriesToAnEndpointNoLongerConfiguredStayPendingUnsent() throws {
        let message = WebhookMessage(id: "msg_old", type: .callEnded, createdAt: clock.now(), lane: "default:x", seq: 1, data: .object([:]))
        try store.apply([.enqueueWebhook(message, endpoints: ["retired"])])
        let dispatcher = try dispatcher()
        defer { dispatcher.stop() }
        settle(dispatcher)
        XCTAssertEqual(poster.attempts, [])
        XCTAssertEqual(try store.pendingWebhooks().map(\.delivery.endpoint), ["retired"])
    }

    func test_deliveriesOlderThanTheRetentionAreDeletedButPendingOnesStay() throws {
        let dispatcher = try dispatcher()
        defer { dispatcher.stop() }
        poster.answer([.status(200), .status(500)], then: .status(500))
        dispatcher.committed(try commit("default:a", 1))
        settle(dispatcher)
        dispatcher.committed(try commit("default:b", 1))
        settle(dispatcher)
        XCTAssertEqual(try status("msg_default:a_1"), .delivered)
        XCTAssertEqual(try status("msg_default:b_1"), .pending)
        XCTAssertEqual(dispatcher.pruneNow(), 0, "nothing is old yet")
        clock.advance(by: .seconds(604_800 + 1))
        XCTAssertEqual(dispatcher.pruneNow(), 1)
        XCTAssertNil(try store.webhook(messageID: "msg_default:a_1", endpoint: "main"))
        XCTAssertEqual(try status("msg_default:b_1"), .pending, "a pending delivery is never deleted")
    }
}
