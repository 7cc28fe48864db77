import Dispatch
import MetricsTestKit
import SwitchboardApp
import XCTest

final class LabelledCountersTests: XCTestCase {
    func testCountsEachLabelValueSeparately() throws {
        let metrics = TestMetrics()
        let closes = LabelledCounters("closes_total", by: "code", factory: metrics)
        closes.increment("1008")
        closes.increment("1008", by: 2)
        closes.increment("1009")
        XCTAssertEqual(try metrics.expectCounter("closes_total", [("code", "1008")]).totalValue, 3)
        XCTAssertEqual(try metrics.expectCounter("closes_total", [("code", "1009")]).totalValue, 1)
        XCTAssertEqual(metrics.counters.count, 2)
    }

    func testReusesOneCounterPerValueAndPrecreates() throws {
        let metrics = TestMetrics()
        let rings = LabelledCounters("rings_total", by: "outcome", factory: metrics, precreating: ["answered", "missed"])
        XCTAssertEqual(try metrics.expectCounter("rings_total", [("outcome", "missed")]).totalValue, 0)
        XCTAssertTrue(rings.counter(for: "answered") === rings.counter(for: "answered"))
        XCTAssertFalse(rings.counter(for: "answered") === rings.counter(for: "missed"))
        _ = rings.counter(for: "declined")
        XCTAssertEqual(metrics.counters.count, 3)
        XCTAssertEqual(rings.label, "rings_total")
        XCTAssertEqual(rings.dimension, "outcome")
    }

    func testConcurrentIncrementsAddUp() throws {
        let metrics = TestMetrics()
        let closes = LabelledCounters("closes_total", by: "code", factory: metrics)
        DispatchQueue.concurrentPerform(iterations: 8) { thread in
            for _ in 0..<500 { closes.increment(thread.isMultiple(of: 2) ? "even" : "odd") }
        }
        XCTAssertEqual(try metrics.expectCounter("closes_total", [("code", "even")]).totalValue, 2_000)
        XCTAssertEqual(try metrics.expectCounter("closes_total", [("code", "odd")]).totalValue, 2_000)
        XCTAssertEqual(metrics.counters.count, 2)
    }
}
