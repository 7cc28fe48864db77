import SwitchboardCore
import XCTest

final class TimeAndLimitsTests: XCTestCase {
    private func time(_ milliseconds: Int64) -> MonotonicTime { MonotonicTime(nanoseconds: milliseconds * 1_000_000) }

    // MARK: TokenBucket

    func test_aNewBucketHoldsItsWholeBurst() {
        var bucket = TokenBucket(rate: 1, burst: 3, now: time(0))
        XCTAssertEqual((0..<4).map { _ in bucket.take(now: time(0)) }, [true, true, true, false])
    }

    func test_aBucketRefillsAtItsRate() {
        var bucket = TokenBucket(rate: 4, burst: 1, now: time(0))
        XCTAssertTrue(bucket.take(now: time(0)))
        XCTAssertFalse(bucket.take(now: time(200)))
        XCTAssertTrue(bucket.take(now: time(250)))
        XCTAssertFalse(bucket.take(now: time(250)))
    }

    func test_aBucketNeverHoldsMoreThanItsBurst() {
        var bucket = TokenBucket(rate: 10, burst: 2, now: time(0))
        XCTAssertEqual((0..<3).map { _ in bucket.take(now: time(100_000)) }, [true, true, false])
    }

    func test_aBucketWithZeroRateNeverRefills() {
        var bucket = TokenBucket(rate: 0, burst: 1, now: time(0))
        XCTAssertTrue(bucket.take(now: time(0)))
        XCTAssertFalse(bucket.take(now: time(1_000_000)))
    }

    func test_aClockGoingBackwardsAddsNoTokens() {
        var bucket = TokenBucket(rate: 1, burst: 1, now: time(10_000))
        XCTAssertTrue(bucket.take(now: time(10_000)))
        XCTAssertFalse(bucket.take(now: time(0)))
        XCTAssertFalse(bucket.take(now: time(500)))
    }

    // MARK: MonotonicTime

    func test_monotonicTimeAdvancesAndMeasuresDurations() {
        let start = time(1000)
        let later = start.advanced(by: .milliseconds(250))
        XCTAssertEqual(later.nanoseconds, 1_250_000_000)
        XCTAssertEqual(later.since(start), .milliseconds(250))
        XCTAssertEqual(start.since(later), .milliseconds(-250))
        XCTAssertLessThan(start, later)
    }

    func test_durationNanosecondsAndMillisecondsAreWhole() {
        XCTAssertEqual(Duration.milliseconds(1500).nanoseconds, 1_500_000_000)
        XCTAssertEqual(Duration.milliseconds(1500).milliseconds, 1500)
        XCTAssertEqual(Duration.seconds(Int64.max).nanoseconds, .max)
    }

    // MARK: RelayConfiguration

    func test_relayDefaultsMatchPeerJSAndTheSpec() {
        let configuration = RelayConfiguration()
        XCTAssertEqual(configuration.key, "peerjs")
        XCTAssertEqual(configuration.concurrentLimit, 5000)
        XCTAssertEqual(configuration.expireTimeout, .milliseconds(5000))
        XCTAssertEqual(configuration.aliveTimeout, .milliseconds(60000))
        XCTAssertFalse(configuration.allowDiscovery)
        XCTAssertEqual(configuration.maxQueuedPerDestination, 256)
        XCTAssertEqual(configuration.maxQueuedPerSender, 1024)
        XCTAssertEqual(configuration.maxQueuedTotal, 100_000)
        XCTAssertEqual(configuration.maxQueuedBytes, 67_108_864)
        XCTAssertEqual(configuration.malformedRate, 5)
        XCTAssertEqual(configuration.malformedBurst, 20)
    }

    func test_theSweepIntervalIsATenthOfTheShorterTimeoutWithinTenMillisecondsAndOneSecond() {
        XCTAssertEqual(RelayConfiguration().sweepInterval, .milliseconds(500))
        XCTAssertEqual(RelayConfiguration(expireTimeout: .milliseconds(1000)).sweepInterval, .milliseconds(100))
        XCTAssertEqual(RelayConfiguration(expireTimeout: .milliseconds(50)).sweepInterval, .milliseconds(10))
        XCTAssertEqual(RelayConfiguration(expireTimeout: .milliseconds(1)).sweepInterval, .milliseconds(10))
        XCTAssertEqual(RelayConfiguration(expireTimeout: .seconds(3600), aliveTimeout: .seconds(7200)).sweepInterval, .seconds(1))
        XCTAssertEqual(RelayConfiguration(expireTimeout: .seconds(60), aliveTimeout: .seconds(2)).sweepInterval, .milliseconds(200))
    }
}
