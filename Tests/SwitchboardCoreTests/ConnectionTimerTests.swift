import SwitchboardCore
import XCTest

/// The transport's own connection deadlines: the wheel, the per-connection state machine, the
/// per-address caps and the rate-limited log counter. All driven by hand-made times.
final class ConnectionTimerTests: XCTestCase {
    private func time(_ milliseconds: Int64) -> MonotonicTime { MonotonicTime(nanoseconds: milliseconds * 1_000_000) }
    private let timeouts = ConnectionTimer.Timeouts(handshake: .seconds(10), ping: .seconds(30))

    // MARK: TimerWheel

    func test_anEntryComesDueAtItsDeadlineNotBefore() {
        var wheel = TimerWheel<Int>(tick: .milliseconds(100), slotCount: 8, start: time(0))
        wheel.schedule(1, at: time(450))
        XCTAssertEqual(wheel.advance(to: time(400)), [])
        XCTAssertEqual(wheel.advance(to: time(449)), [])
        XCTAssertEqual(wheel.advance(to: time(500)).map(\.key), [1])
        XCTAssertEqual(wheel.count, 0)
    }

    func test_aDeadlineBeyondOneTurnOfTheWheelWaitsForItsRound() {
        var wheel = TimerWheel<Int>(tick: .milliseconds(100), slotCount: 8, start: time(0))
        wheel.schedule(7, at: time(2_000))  // 20 ticks: two and a half turns of 8 slots
        for step in stride(from: Int64(100), through: 1_900, by: 100) {
            XCTAssertEqual(wheel.advance(to: time(step)), [], "fired early at \(step) ms")
        }
        XCTAssertEqual(wheel.advance(to: time(2_000)).map(\.key), [7])
    }

    func test_aPastDeadlineFiresOnTheNextTick() {
        var wheel = TimerWheel<Int>(tick: .milliseconds(100), slotCount: 8, start: time(0))
        _ = wheel.advance(to: time(1_000))
        wheel.schedule(3, at: time(200))
        XCTAssertEqual(wheel.advance(to: time(1_000)), [], "same tick: not visited again")
        XCTAssertEqual(wheel.advance(to: time(1_100)).map(\.key), [3])
    }

    func test_aLongGapFiresEverythingDueAndKeepsTheRest() {
        var wheel = TimerWheel<Int>(tick: .milliseconds(100), slotCount: 8, start: time(0))
        for key in 0..<20 { wheel.schedule(key, at: time(Int64(key) * 100 + 50)) }
        wheel.schedule(99, at: time(60_000))
        let due = wheel.advance(to: time(5_000)).map(\.key)
        XCTAssertEqual(Set(due), Set(0..<20))
        XCTAssertEqual(wheel.count, 1)
        XCTAssertEqual(wheel.advance(to: time(60_000)).map(\.key), [99])
    }

    func test_eachTickVisitsOnlyItsOwnSlot() {
        // 10,000 entries spread over 100 ticks: a tick hands back its own ~100, whatever the total.
        var wheel = TimerWheel<Int>(tick: .milliseconds(10), slotCount: 128, start: time(0))
        for key in 0..<10_000 { wheel.schedule(key, at: time(Int64(key % 100) * 10 + 5)) }
        var fired = 0
        for step in 1...100 {
            let due = wheel.advance(to: time(Int64(step) * 10))
            XCTAssertEqual(due.count, 100, "tick \(step)")
            fired += due.count
        }
        XCTAssertEqual(fired, 10_000)
        XCTAssertEqual(wheel.count, 0)
    }

    // MARK: ConnectionTimer

    func test_anAcceptedConnectionIsClosedAtTheHandshakeDeadline() {
        var timer = ConnectionTimer(acceptedAt: time(0), timeouts: timeouts)
        XCTAssertTrue(timer.isPending)
        XCTAssertEqual(timer.deadline, time(10_000))
        XCTAssertEqual(timer.fire(now: time(10_000), timeouts: timeouts), .close("handshake timeout"))
    }

    func test_httpPhasesEachHaveTheirDeadline() {
        var timer = ConnectionTimer(acceptedAt: time(0), timeouts: timeouts)
        timer.requestStarted(now: time(1_000), timeouts: timeouts)
        XCTAssertFalse(timer.isPending)
        XCTAssertEqual(timer.deadline, time(11_000))
        timer.requestDispatched(now: time(2_000), timeouts: timeouts)
        XCTAssertEqual(timer.deadline, time(32_000), "the application gets max(handshake, 30 s)")
        timer.responded(now: time(3_000), timeouts: timeouts)
        XCTAssertEqual(timer.phase, .idle)
        XCTAssertEqual(timer.deadline, time(13_000))
        XCTAssertEqual(timer.fire(now: time(13_000), timeouts: timeouts), .close("keep-alive idle timeout"))
    }

    func test_aSilentWebSocketIsPingedThenClosed() {
        var timer = ConnectionTimer(acceptedAt: time(0), timeouts: timeouts)
        timer.established(now: time(100), timeouts: timeouts, spread: 0)
        XCTAssertEqual(timer.deadline, time(15_100), "spread 0: half an interval")
        XCTAssertEqual(timer.fire(now: time(15_100), timeouts: timeouts), .ping)
        XCTAssertEqual(timer.deadline, time(45_100))
        XCTAssertEqual(timer.fire(now: time(45_100), timeouts: timeouts), .close("ping timeout"))
    }

    func test_aWebSocketHeardFromIsNeitherPingedNorClosed() {
        var timer = ConnectionTimer(acceptedAt: time(0), timeouts: timeouts)
        timer.established(now: time(0), timeouts: timeouts, spread: 1023)
        XCTAssertEqual(timer.deadline.nanoseconds, time(15_000).nanoseconds + 1023 * 15_000_000_000 / 1024)
        timer.heard = true
        XCTAssertEqual(timer.fire(now: time(30_000), timeouts: timeouts), .none)
        XCTAssertFalse(timer.heard)
        XCTAssertEqual(timer.deadline, time(60_000))
        XCTAssertEqual(timer.fire(now: time(60_000), timeouts: timeouts), .ping)
        timer.heard = true  // the pong
        XCTAssertEqual(timer.fire(now: time(90_000), timeouts: timeouts), .none)
        XCTAssertEqual(timer.phase, .webSocket(awaitingPong: false))
    }

    func test_firstPingsOfACrowdAreSpreadOverHalfAnInterval() {
        var deadlines = Set<Int64>()
        for serial in UInt64(0)..<1024 {
            var timer = ConnectionTimer(acceptedAt: time(0), timeouts: timeouts)
            timer.established(now: time(0), timeouts: timeouts, spread: serial)
            XCTAssertGreaterThanOrEqual(timer.deadline, time(15_000))
            XCTAssertLessThan(timer.deadline, time(30_000))
            deadlines.insert(timer.deadline.nanoseconds / 100_000_000)  // 100 ms buckets
        }
        XCTAssertGreaterThanOrEqual(deadlines.count, 140, "1,024 sockets opened together ping in ~150 different ticks")
    }

    func test_aClosingConnectionIsDroppedAfterItsGrace() {
        var timer = ConnectionTimer(acceptedAt: time(0), timeouts: timeouts)
        timer.established(now: time(0), timeouts: timeouts, spread: 0)
        timer.closing(now: time(1_000), grace: .seconds(2))
        XCTAssertEqual(timer.deadline, time(3_000))
        XCTAssertEqual(timer.fire(now: time(3_000), timeouts: timeouts), .close("close timeout"))
    }

    // MARK: AddressCounts

    func test_pendingConnectionsAreCappedPerAddressAndFreedWhenTheySettle() {
        var counts = AddressCounts(maxConnections: 5, maxPending: 2)
        XCTAssertNil(counts.admit("a"))
        XCTAssertNil(counts.admit("a"))
        XCTAssertEqual(counts.admit("a"), .tooManyPending)
        XCTAssertNil(counts.admit("b"), "another address has its own allowance")
        counts.settled("a")
        XCTAssertNil(counts.admit("a"))
        XCTAssertEqual(counts.connections(from: "a"), 3)
        XCTAssertEqual(counts.pendingConnections(from: "a"), 2)
    }

    func test_allConnectionsAreCappedPerAddressAndEntriesLeaveAtZero() {
        var counts = AddressCounts(maxConnections: 2, maxPending: 10)
        XCTAssertNil(counts.admit("a"))
        XCTAssertNil(counts.admit("a"))
        XCTAssertEqual(counts.admit("a"), .tooManyConnections)
        counts.released("a", pending: true)
        XCTAssertNil(counts.admit("a"))
        counts.released("a", pending: true)
        counts.released("a", pending: true)
        XCTAssertEqual(counts.connections(from: "a"), 0)
        XCTAssertEqual(counts.addressCount, 0)
    }

    // MARK: RateLimitedCount and LogText

    func test_aRateLimitedCountReportsTheFirstThenOncePerPeriodWithTheCount() {
        var count = RateLimitedCount(every: .seconds(10))
        XCTAssertEqual(count.record(now: time(0)), 1)
        for step in 1...999 { XCTAssertNil(count.record(now: time(Int64(step)))) }
        XCTAssertEqual(count.record(now: time(10_000)), 1_000)
        XCTAssertNil(count.record(now: time(10_001)))
    }

    func test_logTextEscapesControlCharactersAndCuts() {
        XCTAssertEqual(LogText.escape("a\nb\u{1b}[31m\\"), "a\\u{a}b\\u{1b}[31m\\\\")
        XCTAssertEqual(LogText.escape("\u{0}\u{7f}\u{85}é"), "\\u{0}\\u{7f}\\u{85}é")
        XCTAssertEqual(LogText.escape(String(repeating: "x", count: 10), limit: 4), "xxxx…")
    }
}

/// PeerJS ids compare byte for byte, as documented: the NFC and NFD spellings of one name are two
/// ids (Swift's String equality alone would make them one).
final class PeerIDBytesTests: XCTestCase {
    func test_canonicallyEquivalentSpellingsAreDifferentIDs() throws {
        let composed = try XCTUnwrap(PeerID("caf\u{E9}"))
        let decomposed = try XCTUnwrap(PeerID("cafe\u{301}"))
        XCTAssertEqual(composed.rawValue, decomposed.rawValue, "Swift itself calls the strings equal")
        XCTAssertNotEqual(composed, decomposed)
        XCTAssertEqual(Set([composed, decomposed]).count, 2)
        XCTAssertEqual(composed, PeerID("caf\u{E9}"))
    }
}

/// `server.trusted_proxies`: only a trusted peer's X-Forwarded-For names the client.
final class TrustedProxiesTests: XCTestCase {
    private func proxies(_ texts: [String]) throws -> TrustedProxies { try TrustedProxies(parsing: texts, key: "server.trusted_proxies") }

    func test_anUntrustedPeerIsTheClientWhateverItForwards() throws {
        let trusted = try proxies(["10.0.0.0/8"])
        XCTAssertEqual(trusted.clientAddress(peer: "192.0.2.7", forwardedFor: "203.0.113.9"), "192.0.2.7")
        XCTAssertEqual(try proxies([]).clientAddress(peer: "10.1.1.1", forwardedFor: "203.0.113.9"), "10.1.1.1")
    }

    func test_aTrustedPeerNamesTheRightmostUntrustedAddress() throws {
        let trusted = try proxies(["10.0.0.0/8", "2001:db8::1"])
        XCTAssertEqual(trusted.clientAddress(peer: "10.1.1.1", forwardedFor: "203.0.113.9"), "203.0.113.9")
        // A client cannot spoof by prepending: the proxy appended the real address last.
        XCTAssertEqual(trusted.clientAddress(peer: "10.1.1.1", forwardedFor: "1.2.3.4, 203.0.113.9"), "203.0.113.9")
        XCTAssertEqual(trusted.clientAddress(peer: "10.1.1.1", forwardedFor: "203.0.113.9, 10.2.2.2"), "203.0.113.9", "a chain of proxies")
        XCTAssertEqual(trusted.clientAddress(peer: "2001:db8::1", forwardedFor: "198.51.100.4"), "198.51.100.4")
        XCTAssertEqual(trusted.clientAddress(peer: "10.1.1.1", forwardedFor: "10.3.3.3, 10.2.2.2"), "10.3.3.3", "all trusted: the leftmost")
        XCTAssertEqual(trusted.clientAddress(peer: "10.1.1.1", forwardedFor: "garbage"), "10.1.1.1")
        XCTAssertEqual(trusted.clientAddress(peer: "10.1.1.1", forwardedFor: nil), "10.1.1.1")
    }

    func test_aBadEntryIsAConfigurationErrorNamingIt() {
        XCTAssertThrowsError(try proxies(["10.0.0.0/33"])) { error in
            XCTAssertTrue("\(error)".contains("server.trusted_proxies: \"10.0.0.0/33\""), "\(error)")
        }
        XCTAssertThrowsError(try proxies(["proxy.example"]))
    }
}
