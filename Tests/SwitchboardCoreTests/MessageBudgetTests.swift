import SwitchboardCore
import XCTest

final class MessageBudgetTests: XCTestCase {
    private func at(_ milliseconds: Int64) -> MonotonicTime { MonotonicTime(nanoseconds: milliseconds * 1_000_000) }

    func test_aBurstIsAdmittedThenABurstOfRefusalsThenTheSocketIsFlooding() {
        var budget = MessageBudget(rate: 10, burst: 3, now: at(0))
        let verdicts = (0..<8).map { _ in budget.spend(now: at(0)) }
        XCTAssertEqual(verdicts, [.admitted, .admitted, .admitted, .refused, .refused, .refused, .flooding, .dropped])
    }

    func test_afterFloodingEveryMessageIsDroppedEvenOnceTheBucketsRefill() {
        var budget = MessageBudget(rate: 10, burst: 1, now: at(0))
        XCTAssertEqual([budget.spend(now: at(0)), budget.spend(now: at(0)), budget.spend(now: at(0))], [.admitted, .refused, .flooding])
        XCTAssertEqual(budget.spend(now: at(60_000)), .dropped)
    }

    func test_aSenderUnderTwiceTheRateIsRefusedNowAndThenButNeverClosed() {
        var budget = MessageBudget(rate: 100, burst: 10, now: at(0))
        var counts: [MessageBudget.Verdict: Int] = [:]
        for tick in 0..<15_000 {  // 150 messages a second for 100 s, one every 6⅔ ms
            counts[budget.spend(now: at(Int64(tick) * 20 / 3)), default: 0] += 1
        }
        XCTAssertNil(counts[.flooding], "\(counts)")
        XCTAssertLessThanOrEqual(abs(counts[.admitted, default: 0] - 10_010), 5, "\(counts)")
        XCTAssertLessThanOrEqual(abs(counts[.refused, default: 0] - 4_990), 5, "\(counts)")
    }

    /// The bug this type replaced: a refusal counter reset by every admitted message never
    /// reached the burst when the flood was paced by the reader, however fast it came.
    func test_aPacedFloodAtManyTimesTheRateIsClosedAlthoughSomeMessagesKeepGettingThrough() {
        var budget = MessageBudget(rate: 100, burst: 200, now: at(0))
        var verdicts: [MessageBudget.Verdict] = []
        var microseconds: Int64 = 0
        while verdicts.last != .flooding, microseconds < 10_000_000 {  // 4,000 a second
            verdicts.append(budget.spend(now: MonotonicTime(nanoseconds: microseconds * 1000)))
            microseconds += 250
        }
        XCTAssertEqual(verdicts.last, .flooding)
        XCTAssertGreaterThan(verdicts.count(where: { $0 == .admitted }), 200, "admitted messages came between the refusals")
        XCTAssertLessThan(microseconds, 200_000, "closed within a fifth of a second")
    }
}
