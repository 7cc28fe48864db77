import Foundation
import SwitchboardCore
import XCTest

/// The webhook scheduler's outcomes: backoff with jitter, the retry horizon and dead-letters,
/// 410 disabling an endpoint, and an admin's retry. Time is passed explicitly.
final class WebhookSchedulerRetryTests: XCTestCase {
    func test_backoffDoublesFromOneSecondUpToTheCapWithJitterInHalfToOne() {
        let scheduler = WebhookScheduler()
        for attempts in 1...20 {
            let full = min(pow(2, Double(attempts - 1)), 600)
            XCTAssertEqual(scheduler.backoff(afterAttempts: attempts, random: 0), full / 2, "attempt \(attempts)")
            XCTAssertEqual(scheduler.backoff(afterAttempts: attempts, random: 0.5), full * 0.75, "attempt \(attempts)")
            let highest = scheduler.backoff(afterAttempts: attempts, random: 1.0.nextDown)
            XCTAssertLessThan(highest, full)
            XCTAssertGreaterThan(highest, full * 0.999)
        }
        XCTAssertEqual(scheduler.backoff(afterAttempts: 10, random: 0), 256)
        XCTAssertEqual(scheduler.backoff(afterAttempts: 11, random: 0), 300, "capped at 10 min before jitter")
        XCTAssertEqual(scheduler.backoff(afterAttempts: 10_000, random: 0), 300)
        XCTAssertEqual(
            scheduler.backoff(afterAttempts: 3, random: 7), scheduler.backoff(afterAttempts: 3, random: 1.0.nextDown), "out-of-range randomness is clamped")
        XCTAssertEqual(scheduler.backoff(afterAttempts: 3, random: .nan), 2)
        let custom = WebhookScheduler(configuration: .init(initialBackoff: .milliseconds(250), maximumBackoff: .seconds(5)))
        XCTAssertEqual((1...7).map { custom.backoff(afterAttempts: $0, random: 0) }, [0.125, 0.25, 0.5, 1, 2, 2.5, 2.5])
    }

    func test_eachFailureRecordsTheAttemptAndWaitsWithinTheJitterBounds() throws {
        var scheduler = WebhookScheduler()
        scheduler.enqueue([pendingWebhook("m1", seq: 1)])
        var now = hookTime(0)
        var random = SplitMix64(seed: 3)
        for attempt in 1...14 {
            XCTAssertEqual(scheduler.due(now: now).names, ["ops/m1"], "attempt \(attempt)")
            let outcome: WebhookScheduler.Outcome = attempt.isMultiple(of: 2) ? .status(500) : .failed("connection reset by peer")
            let saved = try XCTUnwrap(scheduler.finish("m1", outcome, now: now, random: random.unit()))
            XCTAssertEqual(saved.status, .pending)
            XCTAssertEqual(saved.attempts, attempt)
            XCTAssertEqual(saved.lastAttemptAt, now)
            XCTAssertEqual(saved.lastStatus, attempt.isMultiple(of: 2) ? 500 : nil)
            XCTAssertEqual(saved.lastError, attempt.isMultiple(of: 2) ? nil : "connection reset by peer")
            let wait = try XCTUnwrap(saved.nextAttemptAt).timeIntervalSince(now)
            let full = min(pow(2, Double(attempt - 1)), 600)
            XCTAssertGreaterThanOrEqual(wait, full * 0.5, "attempt \(attempt)")
            XCTAssertLessThan(wait, full, "attempt \(attempt)")
            XCTAssertEqual(scheduler.nextWake, saved.nextAttemptAt)
            XCTAssertEqual(scheduler.due(now: now.addingTimeInterval(wait - 0.001)), [], "not before the backoff")
            now = now.addingTimeInterval(wait)
        }
    }

    func test_aRedirectIsAFailureAndAnErrorIsStoredEscapedAndShort() throws {
        var scheduler = WebhookScheduler()
        scheduler.enqueue([pendingWebhook("m1", seq: 1)])
        _ = scheduler.due(now: hookTime(0))
        let redirected = try XCTUnwrap(scheduler.finish("m1", .status(302), now: hookTime(1)))
        XCTAssertEqual(redirected.status, .pending)
        XCTAssertEqual(redirected.lastStatus, 302)
        _ = scheduler.due(now: hookTime(10))
        let failed = try XCTUnwrap(scheduler.finish("m1", .failed("bad\u{0}thing" + String(repeating: "x", count: 1000)), now: hookTime(10)))
        XCTAssertEqual(failed.lastStatus, nil)
        XCTAssertFalse(try XCTUnwrap(failed.lastError).contains("\u{0}"), "a NUL would fail the store's validation")
        XCTAssertLessThan(try XCTUnwrap(failed.lastError).count, 320)
    }

    func test_aDeliveryDiesOnlyWhenItsNextAttemptWouldFallAfterTheHorizonAndTheLaneMovesOn() throws {
        var scheduler = WebhookScheduler(configuration: .init(retryHorizon: .seconds(100)))
        scheduler.enqueue([pendingWebhook("m1", seq: 1), pendingWebhook("m2", seq: 2, created: 50)])
        XCTAssertEqual(scheduler.due(now: hookTime(99.5)).names, ["ops/m1"])
        let atTheHorizon = try XCTUnwrap(scheduler.finish("m1", .status(500), now: hookTime(99.5), random: 0))
        XCTAssertEqual(atTheHorizon.status, .pending, "a retry exactly at createdAt + horizon is still made")
        XCTAssertEqual(atTheHorizon.nextAttemptAt, hookTime(100))
        XCTAssertEqual(scheduler.due(now: hookTime(100)).names, ["ops/m1"])
        let dead = try XCTUnwrap(scheduler.finish("m1", .failed("timed out"), now: hookTime(100), random: 0))
        XCTAssertEqual(dead.status, .dead, "the next retry would be at 101, after the horizon")
        XCTAssertNil(dead.nextAttemptAt)
        XCTAssertEqual(dead.attempts, 2)
        XCTAssertEqual(dead.lastError, "timed out")
        XCTAssertEqual(scheduler.pendingCount, 1)
        XCTAssertEqual(scheduler.due(now: hookTime(100)).names, ["ops/m2"], "the call's later event is not blocked")
        XCTAssertEqual(scheduler.finish("m2", .status(200), now: hookTime(100))?.status, .delivered)
    }

    func test_410DisablesOnlyThatEndpointKeepsItsDeliveriesAndEnableResumes() throws {
        let rotated = WebhookEndpointState(name: "ops", secret: "whsec_new", previousSecret: "whsec_old", previousUntil: hookTime(999))
        var scheduler = WebhookScheduler(endpoints: [rotated])
        scheduler.enqueue([
            pendingWebhook("m1", lane: "default:a", seq: 1), pendingWebhook("m2", lane: "default:a", seq: 2),
            pendingWebhook("b1", lane: "default:b", seq: 1),
            pendingWebhook("m1", lane: "default:a", seq: 1, endpoint: "audit"),
        ])
        XCTAssertEqual(scheduler.due(now: hookTime(1)).names, ["audit/m1", "ops/m1", "ops/b1"])
        let mutations = scheduler.finished(messageID: "m1", endpoint: "ops", outcome: .status(410), now: hookTime(2), random: 0)
        let gone = try XCTUnwrap(mutations.savedDeliveries.first)
        XCTAssertEqual(gone.status, .pending)
        XCTAssertEqual(gone.attempts, 1)
        XCTAssertEqual(gone.lastStatus, 410)
        var disabled = rotated
        disabled.disabledAt = hookTime(2)
        XCTAssertEqual(mutations.savedEndpoints, [disabled], "the rotated secrets are kept")
        XCTAssertTrue(scheduler.isDisabled(endpoint: "ops"))
        XCTAssertFalse(scheduler.isDisabled(endpoint: "audit"))

        XCTAssertEqual(scheduler.finish("b1", .status(500), now: hookTime(3))?.status, .pending, "an attempt already in flight still ends")
        XCTAssertEqual(scheduler.finished(messageID: "m1", endpoint: "audit", outcome: .status(200), now: hookTime(3), random: 0).count, 1)
        scheduler.enqueue([
            pendingWebhook("m2", lane: "default:a", seq: 2, endpoint: "audit"), pendingWebhook("c1", lane: "default:c", seq: 1, created: 3),
        ])
        XCTAssertEqual(scheduler.due(now: hookTime(100)).names, ["audit/m2"], "nothing more is sent to ops")
        XCTAssertEqual(scheduler.pendingCount(endpoint: "ops"), 4, "its deliveries stay pending")
        XCTAssertNil(scheduler.nextWake)
        XCTAssertEqual(scheduler.disable(endpoint: "ops", now: hookTime(101)), [], "disabled already")

        XCTAssertEqual(scheduler.enable(endpoint: "ops"), [.saveWebhookEndpoint(rotated)])
        XCTAssertEqual(scheduler.enable(endpoint: "ops"), [], "enabled already")
        XCTAssertEqual(scheduler.nextWake, hookTime(2))
        XCTAssertEqual(scheduler.due(now: hookTime(102)).names, ["ops/m1", "ops/c1", "ops/b1"], "each lane's head again, earliest due first")
    }

    func test_anEndpointDisabledBeforeARestartStaysDisabled() {
        var scheduler = WebhookScheduler(endpoints: [WebhookEndpointState(name: "ops", disabledAt: hookTime(-60))])
        scheduler.enqueue([pendingWebhook("m1", seq: 1), pendingWebhook("m1", seq: 1, endpoint: "audit")])
        XCTAssertEqual(scheduler.due(now: hookTime(0)).names, ["audit/m1"])
        XCTAssertEqual(scheduler.endpointState("ops")?.disabledAt, hookTime(-60))
        scheduler.updateEndpoint(WebhookEndpointState(name: "ops", secret: "whsec_rotated"))
        XCTAssertEqual(scheduler.due(now: hookTime(0)).names, ["ops/m1"], "a state without disabledAt enables")
        XCTAssertEqual(scheduler.disable(endpoint: "ops", now: hookTime(1)).savedEndpoints.first?.secret, "whsec_rotated")
    }

    func test_anAdminRetryPutsADeadDeliveryBackAtItsPlaceInTheLane() throws {
        var scheduler = WebhookScheduler(configuration: .init(retryHorizon: .seconds(10)))
        scheduler.enqueue([pendingWebhook("m1", seq: 1), pendingWebhook("m2", seq: 2), pendingWebhook("m3", seq: 3)])
        _ = scheduler.due(now: hookTime(20))
        let dead = try XCTUnwrap(scheduler.finish("m1", .status(500), now: hookTime(20)))
        XCTAssertEqual(dead.status, .dead)
        XCTAssertEqual(scheduler.due(now: hookTime(20)).names, ["ops/m2"])
        XCTAssertEqual(scheduler.finish("m2", .status(200), now: hookTime(21))?.status, .delivered)

        let stored = PendingWebhook(delivery: dead, message: webhookMessage("m1", seq: 1))
        let mutations = try scheduler.retry(messageID: "m1", endpoint: "ops", stored: stored, now: hookTime(30))
        var expected = dead
        expected.status = .pending
        expected.nextAttemptAt = hookTime(30)
        XCTAssertEqual(mutations, [.saveWebhookDelivery(expected)], "attempts and the last answer are kept")
        XCTAssertEqual(scheduler.pendingCount, 2)
        XCTAssertEqual(scheduler.nextWake, hookTime(30), "m1 is the lane's head again, before m3")
        XCTAssertEqual(scheduler.due(now: hookTime(30)).names, ["ops/m1"], "m1 goes before m3")
        XCTAssertThrowsError(try scheduler.retry(messageID: "m1", endpoint: "ops", stored: stored, now: hookTime(30))) {
            XCTAssertEqual(($0 as? SwitchboardError)?.code, .conflict, "in flight: not dead")
        }
        let again = try XCTUnwrap(scheduler.finish("m1", .status(500), now: hookTime(31)))
        XCTAssertEqual(again.status, .dead, "past the horizon an admin retry is one attempt")
        XCTAssertEqual(again.attempts, 2)
        XCTAssertEqual(scheduler.due(now: hookTime(31)).names, ["ops/m3"])
    }

    func test_anAdminRetryOfAnythingButADeadDeliveryIsRefused() throws {
        var scheduler = WebhookScheduler()
        let waiting = pendingWebhook("m1", seq: 1)
        scheduler.enqueue([waiting])
        func code(_ messageID: String, _ endpoint: String, _ stored: PendingWebhook?) -> SwitchboardError.Code? {
            do {
                _ = try scheduler.retry(messageID: messageID, endpoint: endpoint, stored: stored, now: hookTime(5))
                return nil
            } catch {
                return error.code
            }
        }
        XCTAssertEqual(code("m1", "ops", waiting), .conflict, "pending")
        XCTAssertEqual(code("m1", "ops", nil), .conflict, "held pending, whatever the store says")
        var delivered = pendingWebhook("m0", seq: 0)
        delivered.delivery.status = .delivered
        XCTAssertEqual(code("m0", "ops", delivered), .conflict)
        XCTAssertEqual(code("m9", "ops", nil), .notFound)
        var otherDead = pendingWebhook("m8", seq: 8, endpoint: "audit")
        otherDead.delivery.status = .dead
        XCTAssertEqual(code("m8", "ops", otherDead), .notFound, "the stored delivery must be the one asked for")
        XCTAssertEqual(scheduler.pendingCount, 1)
    }
}
