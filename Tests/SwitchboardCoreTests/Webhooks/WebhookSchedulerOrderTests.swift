import Foundation
import SwitchboardCore
import XCTest

/// The webhook scheduler's lanes: per-call order, head-of-line blocking within a lane only, the
/// in-flight limit, duplicates, the wake time and the counters. Time is passed explicitly.
final class WebhookSchedulerOrderTests: XCTestCase {
    func test_aLaneIsSentInSeqOrderWhateverOrderItWasEnqueuedIn() {
        var scheduler = WebhookScheduler()
        scheduler.enqueue([pendingWebhook("m3", seq: 3)])
        scheduler.enqueue([pendingWebhook("m1", seq: 1), pendingWebhook("m2", seq: 2)])
        var sent: [String] = []
        for second in 1...4 {
            let now = hookTime(Double(second))
            let due = scheduler.due(now: now)
            XCTAssertLessThanOrEqual(due.count, 1, "one attempt per lane at a time")
            XCTAssertEqual(scheduler.due(now: now), [], "nothing more until the head's outcome")
            for webhook in due {
                sent.append(webhook.delivery.messageID)
                XCTAssertEqual(scheduler.finish(webhook.delivery.messageID, .status(204), now: now)?.status, .delivered)
            }
        }
        XCTAssertEqual(sent, ["m1", "m2", "m3"])
        XCTAssertEqual(scheduler.pendingCount, 0)
        XCTAssertNil(scheduler.nextWake)
    }

    func test_sameSeqIsOrderedByMessageID() {
        var scheduler = WebhookScheduler()
        scheduler.enqueue([pendingWebhook("m_b", seq: 5), pendingWebhook("m_a", seq: 5)])
        XCTAssertEqual(scheduler.due(now: hookTime(0)).names, ["ops/m_a"])
    }

    func test_aHeadWaitingToRetryBlocksItsLaneButNotOtherLanesOrEndpoints() throws {
        var scheduler = WebhookScheduler()
        scheduler.enqueue([
            pendingWebhook("a1", lane: "default:a", seq: 1), pendingWebhook("a2", lane: "default:a", seq: 2),
            pendingWebhook("b1", lane: "default:b", seq: 1), pendingWebhook("a1", lane: "default:a", seq: 1, endpoint: "audit"),
        ])
        XCTAssertEqual(scheduler.due(now: hookTime(0)).names, ["audit/a1", "ops/a1", "ops/b1"])
        let failed = try XCTUnwrap(scheduler.finish("a1", .status(503), now: hookTime(1), random: 0))
        XCTAssertEqual(failed.status, .pending)
        XCTAssertEqual(failed.nextAttemptAt, hookTime(1.5), "first retry after 1 s × 0.5 jitter")
        XCTAssertEqual(scheduler.finish("b1", .status(200), now: hookTime(1))?.status, .delivered)
        XCTAssertEqual(scheduler.finish("a1", .status(200), to: "audit", now: hookTime(1))?.status, .delivered)
        scheduler.enqueue([pendingWebhook("b2", lane: "default:b", seq: 2, created: 1)])
        XCTAssertEqual(
scheduler.due(now: hookTime(1)).names, ["ops/b2"], "b moves on; a2 waits behind a1")
        XCTAssertEqual(scheduler.nextWake, hookTime(1.5))
        XCTAssertEqual(scheduler.due(now: hookTime(1.4)), [])
        XCTAssertEqual(scheduler.due(now: hookTime(1.5)).names, ["ops/a1"], "the retry comes first, then a2")
        XCTAssertEqual(scheduler.finish("a1", .status(200), now: hookTime(2))?.attempts, 2)
        XCTAssertEqual(scheduler.due(now: hookTime(2)).names, ["ops/a2"])
    }

    func test_atMostTheLimitIsInFlightPerEndpoint() {
        var scheduler = WebhookScheduler(configuration: .init(maxInFlightPerEndpoint: 2))
        scheduler.enqueue((1...5).map { pendingWebhook("o\($0)", lane: "default:c\($0)", seq: 1, created: Double($0)) })
        scheduler.enqueue([pendingWebhook("x1", lane: "default:c1", seq: 1, endpoint: "audit")])
        XCTAssertEqual(scheduler.due(now: hookTime(10)).names, ["audit/x1", "ops/o1", "ops/o2"], "oldest due first")
        XCTAssertEqual(scheduler.inFlightCount, 3)
        XCTAssertEqual(scheduler.inFlightCount(endpoint: "ops"), 2)
        XCTAssertNil(scheduler.nextWake, "ops is at its limit: nothing to wake for until an outcome")
        XCTAssertEqual(scheduler.due(now: hookTime(11)), [])
        _ = scheduler.finish("o2", .failed("timeout"), now: hookTime(11))
        XCTAssertEqual(scheduler.nextWake, hookTime(3), "o3 has been due since its creation")
        XCTAssertEqual(scheduler.due(now: hookTime(11)).names, ["ops/o3"])
        XCTAssertEqual(scheduler.inFlightCount(endpoint: "ops"), 2)
        XCTAssertEqual(scheduler.pendingCount, 6)
    }

    func test_aDuplicateEnqueueIsIgnoredEvenInFlightAndSoIsAFinishedDelivery() {
        var scheduler = WebhookScheduler()
        scheduler.enqueue([pendingWebhook("m1", seq: 1), pendingWebhook("m1", seq: 1)])
        XCTAssertEqual(scheduler.pendingCount, 1)
        XCTAssertEqual(scheduler.due(now: hookTime(0)).names, ["ops/m1"])
        scheduler.enqueue([pendingWebhook("m1", seq: 1)])
        XCTAssertEqual(scheduler.pendingCount, 1)
        var delivered = pendingWebhook("m0", seq: 0)
        delivered.delivery.status = .delivered
        var dead = pendingWebhook("m9", seq: 9)
        dead.delivery.status = .dead
        scheduler.enqueue([delivered, dead])
        XCTAssertEqual(scheduler.pendingCount, 1, "only pending deliveries are held")
        XCTAssertEqual(scheduler.finish("m1", .status(200), now: hookTime(1))?.status, .delivered)
        XCTAssertEqual(scheduler.due(now: hookTime(2)), [], "m1 is not sent twice")
    }

    func test_anOutcomeForAnAttemptNotInFlightChangesNothing() {
        var scheduler = WebhookScheduler()
        scheduler.enqueue([pendingWebhook("m1", seq: 1), pendingWebhook("m2", seq: 2)])
        XCTAssertEqual(scheduler.finished(messageID: "m1", endpoint: "ops", outcome: .status(200), now: hookTime(0), random: 0), [])
        XCTAssertEqual(scheduler.due(now: hookTime(0)).names, ["ops/m1"])
        XCTAssertEqual(scheduler.finished(messageID: "m2", endpoint: "ops", outcome: .status(200), now: hookTime(0), random: 0), [])
        XCTAssertEqual(scheduler.finished(messageID: "m1", endpoint: "audit", outcome: .status(200), now: hookTime(0), random: 0), [])
        XCTAssertEqual(scheduler.finished(messageID: "zz", endpoint: "ops", outcome: .status(200), now: hookTime(0), random: 0), [])
        XCTAssertEqual(scheduler.inFlightCount, 1)
        XCTAssertEqual(scheduler.finish("m1", .status(200), now: hookTime(1))?.status, .delivered)
        XCTAssertEqual(scheduler.finished(messageID: "m1", endpoint: "ops", outcome: .status(200), now: hookTime(1), random: 0), [], "reported twice")
        XCTAssertEqual(scheduler.inFlightCount, 0)
        XCTAssertEqual(scheduler.pendingCount, 1)
    }

    func test_nextWakeIsTheEarliestDueHeadOfASendableEndpoint() throws {
        var scheduler = WebhookScheduler()
        XCTAssertNil(scheduler.nextWake)
        scheduler.enqueue([pendingWebhook("m1", seq: 1, created: 5), pendingWebhook("m2", seq: 2, created: 6)])
        XCTAssertEqual(scheduler.nextWake, hookTime(5), "the head's time, not m2's")
        XCTAssertEqual(scheduler.due(now: hookTime(4)), [], "not before it is due")
        XCTAssertEqual(scheduler.due(now: hookTime(5)).count, 1)
        XCTAssertNil(scheduler.nextWake, "the lane's head is in flight")
        let retry = try XCTUnwrap(scheduler.finish("m1", .failed("connection refused"), now: hookTime(7), random: 0.5))
        XCTAssertEqual(retry.nextAttemptAt, hookTime(7.75))
        XCTAssertEqual(scheduler.nextWake, hookTime(7.75))
        scheduler.enqueue([pendingWebhook("n1", lane: "default:n", seq: 1, created: 7)])
        XCTAssertEqual(scheduler.nextWake, hookTime(7))
        _ = scheduler.disable(endpoint: "ops", now: hookTime(7))
        XCTAssertNil(scheduler.nextWake, "a disabled endpoint has nothing due")
    }

    func test_countersForMetrics() {
        var scheduler = WebhookScheduler()
        XCTAssertEqual(scheduler.pendingCount, 0)
        XCTAssertNil(scheduler.oldestPendingCreatedAt)
        scheduler.enqueue([
            pendingWebhook("m1", lane: "default:a", seq: 1, created: 30), pendingWebhook("m2", lane: "default:a", seq: 2, created: 20),
            pendingWebhook("m3", lane: "default:b", seq: 1, created: 40),
            pendingWebhook("m1", lane: "default:a", seq: 1, endpoint: "audit", created: 30),
        ])
        XCTAssertEqual(scheduler.pendingCount, 4)
        XCTAssertEqual(scheduler.pendingCount(endpoint: "ops"), 3)
        XCTAssertEqual(scheduler.pendingCount(endpoint: "nobody"), 0)
        XCTAssertEqual(scheduler.oldestPendingCreatedAt, hookTime(20), "the oldest anywhere, not only heads")
        XCTAssertEqual(scheduler.due(now: hookTime(40)).count, 3)
        XCTAssertEqual(scheduler.inFlightCount, 3)
        XCTAssertEqual(scheduler.pendingCount, 4, "in flight is still pending")
        _ = scheduler.finish("m1", .status(200), now: hookTime(41))
        _ = scheduler.finish("m1", .status(500), to: "audit", now: hookTime(41))
        XCTAssertEqual(scheduler.pendingCount, 3)
        XCTAssertEqual(scheduler.oldestPendingCreatedAt, hookTime(20))
        XCTAssertEqual(scheduler.inFlightCount, 1)
        XCTAssertEqual(scheduler.due(now: hookTime(41)).names, ["ops/m2"])
        _ = scheduler.finish("m2", .status(200), now: hookTime(42))
        XCTAssertEqual(scheduler.oldestPendingCreatedAt, hookTime(30), "audit's m1, still pending")
        XCTAssertEqual(scheduler.pendingCount(endpoint: "audit"), 1)
        XCTAssertEqual(scheduler.inFlightCount(endpoint: "ops"), 1)
    }

    func test_largeQueuesKeepTheirOrderAndTheirOldestThroughCompaction() throws {
        var scheduler = WebhookScheduler(configuration: .init(maxInFlightPerEndpoint: 4000))
        // 3,000 events of one call enqueued newest first: each changes the lane's head.
        scheduler.enqueue((1...3000).reversed().map { pendingWebhook("r\($0)", lane: "default:long", seq: Int64($0), created: 10) })
        scheduler.enqueue([pendingWebhook("old", lane: "default:stuck", seq: 1, created: 0)])
        XCTAssertEqual(scheduler.due(now: hookTime(10)).names, ["ops/old", "ops/r1"])
        XCTAssertEqual(scheduler.finish("old", .status(500), now: hookTime(10))?.status, .pending)
        // 3,000 deliveries newer than the oldest end while it waits.
        for seq in 1...3000 {
            XCTAssertEqual(scheduler.finish("r\(seq)", .status(200), now: hookTime(10.25))?.status, .delivered)
            XCTAssertEqual(scheduler.due(now: hookTime(10.25)).names, seq < 3000 ? ["ops/r\(seq + 1)"] : [], "after r\(seq)")
            XCTAssertEqual(scheduler.oldestPendingCreatedAt, hookTime(0))
        }
        XCTAssertEqual(scheduler.due(now: hookTime(10.5)).names, ["ops/old"])
        XCTAssertEqual(scheduler.pendingCount, 1)
        XCTAssertEqual(scheduler.finish("old", .status(200), now: hookTime(12))?.status, .delivered)
        XCTAssertNil(scheduler.oldestPendingCreatedAt)
        XCTAssertNil(scheduler.nextWake)
    }

    /// Random outcomes across lanes and endpoints: no lane ever has two attempts in flight, no
    /// endpoint more than its limit, and each lane's deliveries end in `seq` order.
    func test_randomRunsKeepLaneOrderAndLimits() {
        for seed in UInt64(1)...20 {
            var random = SplitMix64(seed: seed)
            var scheduler = WebhookScheduler(configuration: .init(maxInFlightPerEndpoint: 3, retryHorizon: .seconds(120)))
            var inFlight: [PendingWebhook] = []
            var ended: [String: [Int64]] = [:]
            var nextSeq: [String: Int64] = [:]
            var now = hookTime(0)
            var held: [String: Date] = [:]
            for _ in 0..<400 {
                now = now.addingTimeInterval(random.unit() * 2)
                if random.chance(0.3) {
                    let lane = "default:c\(random.next() % 6)"
                    let seq = nextSeq[lane, default: 0] + 1
                    nextSeq[lane] = seq
                    let endpoint = random.chance(0.5) ? "ops" : "audit"
                    let created = now.timeIntervalSince(hookTime(0))
                    scheduler.enqueue([pendingWebhook("\(lane)#\(seq)", lane: lane, seq: seq, endpoint: endpoint, created: created)])
                    held["\(endpoint) \(lane)#\(seq)"] = hookTime(created)
                }
                inFlight += scheduler.due(now: now)
                for endpoint in ["ops", "audit"] {
                    let lanes = inFlight.filter { $0.delivery.endpoint == endpoint }.map(\.delivery.lane)
                    XCTAssertEqual(Set(lanes).count, lanes.count, "seed \(seed): two attempts in flight in one lane")
                    XCTAssertLessThanOrEqual(lanes.count, 3)
                }
                guard !inFlight.isEmpty, random.chance(0.6) else { continue }
                let attempt = inFlight.remove(at: Int(random.next() % UInt64(inFlight.count)))
                let outcome: WebhookScheduler.Outcome = random.chance(0.5) ? .status(200) : random.chance(0.5) ? .status(500) : .failed("reset")
                for saved in scheduler.finished(
                    messageID: attempt.delivery.messageID, endpoint: attempt.delivery.endpoint, outcome: outcome, now: now,
                    random: random.unit()
                ).savedDeliveries where saved.status != .pending {
                    ended["\(saved.endpoint) \(saved.lane)", default: []].append(saved.seq)
                    held["\(saved.endpoint) \(saved.messageID)"] = nil
                }
                XCTAssertEqual(scheduler.oldestPendingCreatedAt, held.values.min(), "seed \(seed)")
            }
            for (lane, seqs) in ended { XCTAssertEqual(seqs, seqs.sorted(), "seed \(seed): \(lane) out of order") }
            XCTAssertEqual(scheduler.pendingCount, held.count)
            XCTAssertEqual(scheduler.inFlightCount, inFlight.count)
        }
    }
}
