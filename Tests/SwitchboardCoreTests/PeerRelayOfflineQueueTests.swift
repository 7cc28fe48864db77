import SwitchboardCore
import XCTest

final class PeerRelayOfflineQueueTests: XCTestCase {
    // MARK: Expiry

    func test_aQueuedMessageIsNotExpiredBeforeExpireTimeout() {
        let harness = RelayHarness()
        let a = harness.connect("a")
        harness.receive(a, frame("OFFER", to: "x"))
        harness.at(milliseconds: 4999)
        XCTAssertEqual(harness.tick(), [])
        XCTAssertEqual(harness.relay.queueDepth.messages, 1)
    }

    func test_queuedMessagesExpireAfterExpireTimeoutWithOneExpireToTheSender() {
        let harness = RelayHarness()
        let a = harness.connect("a")
        harness.receive(a, frame("OFFER", to: "x"))
        harness.receive(a, frame("CANDIDATE", to: "x"))
        harness.receive(a, frame("CANDIDATE", to: "x"))
        harness.at(milliseconds: 5001)
        XCTAssertEqual(harness.tick(), [#"send a {"type":"EXPIRE","src":"x","dst":"a"}"#])
        XCTAssertEqual(harness.relay.queueDepth.messages, 0)
        XCTAssertEqual(harness.relay.queueDepth.bytes, 0)
        XCTAssertEqual(harness.relay.queuedDestinations, 0)
        XCTAssertEqual(harness.relay.stats.expired, 3)
        XCTAssertEqual(harness.relay.stats.expireNotices, 1)
        harness.at(milliseconds: 20_000)
        XCTAssertEqual(harness.tick(), [])
    }

    func test_theExpireTimeoutIsTheConfiguredOne() {
        let harness = RelayHarness(RelayConfiguration(expireTimeout: .milliseconds(200)))
        let a = harness.connect("a")
        harness.receive(a, frame("OFFER", to: "x"))
        harness.at(milliseconds: 199)
        XCTAssertEqual(harness.tick(), [])
        harness.at(milliseconds: 201)
        XCTAssertEqual(harness.tick(), ["send a \(expireFrame(offline: "x", sender: "a"))"])
    }

    /// `a` sent an OFFER to the absent `x` and was told (one EXPIRE) at 5001 ms.
    private func offerToAbsentXExpired() -> (RelayHarness, ConnectionID) {
        let harness = RelayHarness()
        let a = harness.connect("a")
        harness.receive(a, frame("OFFER", to: "x"))
        harness.at(milliseconds: 5001)
        XCTAssertEqual(harness.tick().count, 1)
        return (harness, a)
    }

    func test_expiredMessagesAreNotDeliveredWhenTheDestinationConnectsLater() {
        let (harness, _) = offerToAbsentXExpired()
        harness.connect("x")
    }

    func test_eachQueuedMessageExpiresOnItsOwnClock() {
        let harness = RelayHarness()
        let a = harness.connect("a")
        harness.receive(a, frame("OFFER", to: "x", payload: "1"))
        harness.at(milliseconds: 3000)
        harness.receive(a, frame("CANDIDATE", to: "x", payload: "2"))
        harness.at(milliseconds: 5001)
        XCTAssertEqual(harness.tick(), ["send a \(expireFrame(offline: "x", sender: "a"))"])
        XCTAssertEqual(harness.relay.queueDepth.messages, 1)
        harness.at(milliseconds: 7999)
        XCTAssertEqual(harness.tick(), [])
        harness.at(milliseconds: 8001)
        XCTAssertEqual(harness.tick(), [], "a was told once already, and x is still away")
        XCTAssertEqual(harness.relay.queueDepth.messages, 0)
        XCTAssertEqual(harness.relay.stats.expired, 2)
        XCTAssertEqual(harness.relay.stats.expireNotices, 1)
    }

    /// A browser trickles CANDIDATEs ~100 ms after its OFFER: they expire in the next sweep, and
    /// the PeerJS client must not get a second `peer-unavailable`.
    func test_trickledCandidatesExpiringInALaterSweepSendNoSecondExpire() {
        let harness = RelayHarness()
        let a = harness.connect("a")
        harness.receive(a, frame("OFFER", to: "x"))
        harness.at(milliseconds: 100)
        harness.receive(a, frame("CANDIDATE", to: "x"))
        harness.at(milliseconds: 5050)
        XCTAssertEqual(harness.tick(), ["send a \(expireFrame(offline: "x", sender: "a"))"])
        harness.at(milliseconds: 5150)
        XCTAssertEqual(harness.tick(), [])
        XCTAssertEqual(harness.relay.stats.expired, 2)
        XCTAssertEqual(harness.relay.stats.expireNotices, 1)
        harness.at(milliseconds: 30_000)
        harness.receive(a, frame("OFFER", to: "x"))  // a new call attempt much later: x is still away
        harness.at(milliseconds: 35_001)
        XCTAssertEqual(harness.tick(), ["send a \(expireFrame(offline: "x", sender: "a"))"], "a new attempt hears of it")
    }

    func test_aPairIsToldAgainOnceTheDestinationHasComeAndGone() {
        let (harness, a) = offerToAbsentXExpired()
        let x = harness.connect("x")
        harness.close(x)
        harness.receive(a, frame("OFFER", to: "x"))
        harness.at(milliseconds: 10_002)
        XCTAssertEqual(harness.tick(), ["send a \(expireFrame(offline: "x", sender: "a"))"])
    }

    func test_aNewSocketForTheSendersIdIsToldAgain() {
        let harness = RelayHarness()
        let a = harness.connect("a", token: "t1")
        harness.receive(a, frame("OFFER", to: "x"))
        harness.at(milliseconds: 5001)
        XCTAssertEqual(harness.tick().count, 1)
        harness.close(a)
        let again = harness.connect("a", token: "t2", label: "a2")
        harness.receive(again, frame("OFFER", to: "x"))
        harness.at(milliseconds: 10_002)
        XCTAssertEqual(harness.tick(), ["send a2 \(expireFrame(offline: "x", sender: "a"))"])
    }

    func test_aYoungerMessageIsStillDeliveredAfterAnOlderOneExpired() {
        let harness = RelayHarness()
        let a = harness.connect("a")
        harness.receive(a, frame("OFFER", to: "x", payload: "1"))
        harness.at(milliseconds: 3000)
        harness.receive(a, frame("CANDIDATE", to: "x", payload: "2"))
        harness.at(milliseconds: 5001)
        XCTAssertEqual(harness.tick().count, 1)
        let (_, effects) = harness.open("x", query: ["key": "peerjs", "id": "x", "token": "t"])
        XCTAssertEqual(effects, ["send x \(openFrame)", "send x \(relayed("CANDIDATE", from: "a", to: "x", payload: "2"))"])
    }

    func test_oneExpireIsSentPerSenderAndDestinationPair() {
        let harness = RelayHarness()
        let a = harness.connect("a")
        let b = harness.connect("b")
        harness.receive(a, frame("OFFER", to: "x"))
        harness.receive(a, frame("CANDIDATE", to: "x"))
        harness.receive(a, frame("OFFER", to: "y"))
        harness.receive(b, frame("OFFER", to: "x"))
        harness.receive(b, frame("CANDIDATE", to: "x"))
        harness.at(milliseconds: 5001)
        XCTAssertEqual(harness.tick().sorted(), [
            "send a \(expireFrame(offline: "x", sender: "a"))",
            "send a \(expireFrame(offline: "y", sender: "a"))",
            "send b \(expireFrame(offline: "x", sender: "b"))",
        ])
        XCTAssertEqual(harness.relay.stats.expired, 5)
        XCTAssertEqual(harness.relay.stats.expireNotices, 3)
    }

    func test_expireGoesToWhoeverHoldsTheSendersIdNow() {
        let harness = RelayHarness()
        let a = harness.connect("a", token: "t1")
        harness.receive(a, frame("OFFER", to: "x"))
        harness.close(a)
        harness.at(milliseconds: 1000)
        harness.connect("a", token: "t2", label: "a2")
        harness.at(milliseconds: 5001)
        XCTAssertEqual(harness.tick(), ["send a2 \(expireFrame(offline: "x", sender: "a"))"])
    }

    func test_expireGoesToTheNewSocketAfterATakeover() {
        let harness = RelayHarness()
        let old = harness.connect("a", token: "t", label: "old")
        harness.receive(old, frame("OFFER", to: "x"))
        harness.connect("a", token: "t", label: "new")
        harness.at(milliseconds: 5001)
        XCTAssertEqual(harness.tick(), ["send new \(expireFrame(offline: "x", sender: "a"))"])
    }

    func test_expireIsDroppedWhenNobodyHoldsTheSendersId() {
        let harness = RelayHarness()
        let a = harness.connect("a")
        harness.receive(a, frame("OFFER", to: "x"))
        harness.close(a)
        harness.at(milliseconds: 5001)
        XCTAssertEqual(harness.tick(), [])
        XCTAssertEqual(harness.relay.queueDepth.messages, 0)
        XCTAssertEqual(harness.relay.stats.expired, 1)
    }

    func test_messagesFromASenderThatLeftStayQueuedForTheDestination() {
        let harness = RelayHarness()
        let a = harness.connect("a")
        harness.receive(a, frame("OFFER", to: "x"))
        harness.close(a)
        harness.at(milliseconds: 1000)
        let (_, effects) = harness.open("x", query: ["key": "peerjs", "id": "x", "token": "t"])
        XCTAssertEqual(effects, ["send x \(openFrame)", "send x \(relayed("OFFER", from: "a", to: "x"))"])
    }

    // MARK: Bounds

    func test_aMessageOverThePerDestinationBoundIsAnsweredAtOnceWithExpire() {
        let harness = RelayHarness(RelayConfiguration(maxQueuedPerDestination: 2))
        let a = harness.connect("a")
        let b = harness.connect("b")
        XCTAssertEqual(harness.receive(a, frame("OFFER", to: "x")), [])
        XCTAssertEqual(harness.receive(b, frame("OFFER", to: "x")), [])
        XCTAssertEqual(harness.receive(a, frame("CANDIDATE", to: "x")), ["send a \(expireFrame(offline: "x", sender: "a"))"])
        XCTAssertEqual(harness.relay.queueDepth.messages, 2)
        XCTAssertEqual(harness.relay.stats.overflowed, 1)
        XCTAssertEqual(harness.relay.stats.queued, 2)
        // Another destination still has room.
        XCTAssertEqual(harness.receive(a, frame("OFFER", to: "y")), [])
        XCTAssertEqual(harness.relay.queueDepth.messages, 3)
    }

    func test_aMessageOverThePerSenderBoundIsAnsweredAtOnceWithExpire() {
        let harness = RelayHarness(RelayConfiguration(maxQueuedPerSender: 2))
        let a = harness.connect("a")
        let b = harness.connect("b")
        XCTAssertEqual(harness.receive(a, frame("OFFER", to: "x")), [])
        XCTAssertEqual(harness.receive(a, frame("OFFER", to: "y")), [])
        XCTAssertEqual(harness.receive(a, frame("OFFER", to: "z")), ["send a \(expireFrame(offline: "z", sender: "a"))"])
        // Another sender still has room.
        XCTAssertEqual(harness.receive(b, frame("OFFER", to: "z")), [])
        XCTAssertEqual(harness.relay.queueDepth.messages, 3)
        XCTAssertEqual(harness.relay.stats.overflowed, 1)
    }

    func test_aSenderOverItsShareOfTheQueuedBytesIsAnsweredWithExpireAndOthersStillQueue() {
        let size = relayed("OFFER", from: "a", to: "x").utf8.count
        let harness = RelayHarness(RelayConfiguration(maxQueuedBytes: 10 * size, maxQueuedBytesPerSender: 2 * size))
        let a = harness.connect("a")
        let b = harness.connect("b")
        XCTAssertEqual(harness.receive(a, frame("OFFER", to: "x")), [])
        XCTAssertEqual(harness.receive(a, frame("OFFER", to: "y")), [])
        XCTAssertEqual(harness.receive(a, frame("OFFER", to: "z")), ["send a \(expireFrame(offline: "z", sender: "a"))"])
        // The total has room: another sender queues as before.
        XCTAssertEqual(harness.receive(b, frame("OFFER", to: "z")), [])
        XCTAssertEqual(harness.relay.queueDepth.messages, 3)
        // Delivering a's queue gives its share back.
        _ = harness.open("x", query: ["key": "peerjs", "id": "x", "token": "t"])
        XCTAssertEqual(harness.receive(a, frame("OFFER", to: "w")), [])
    }

    func test_aMessageOverTheTotalCountBoundIsAnsweredAtOnceWithExpire() {
        let harness = RelayHarness(RelayConfiguration(maxQueuedTotal: 2))
        let a = harness.connect("a")
        let b = harness.connect("b")
        let c = harness.connect("c")
        XCTAssertEqual(harness.receive(a, frame("OFFER", to: "x")), [])
        XCTAssertEqual(harness.receive(b, frame("OFFER", to: "y")), [])
        XCTAssertEqual(harness.receive(c, frame("OFFER", to: "z")), ["send c \(expireFrame(offline: "z", sender: "c"))"])
        XCTAssertEqual(harness.relay.queueDepth.messages, 2)
    }

    func test_aMessageOverTheTotalBytesBoundIsAnsweredAtOnceWithExpire() {
        let size = relayed("OFFER", from: "a", to: "x").utf8.count
        let harness = RelayHarness(RelayConfiguration(maxQueuedBytes: 2 * size))
        let a = harness.connect("a")
        let b = harness.connect("b")
        XCTAssertEqual(harness.receive(a, frame("OFFER", to: "x")), [])
        XCTAssertEqual(harness.receive(a, frame("OFFER", to: "x")), [])
        XCTAssertEqual(harness.relay.queueDepth.bytes, 2 * size)
        XCTAssertEqual(harness.receive(b, frame("OFFER", to: "y")), ["send b \(expireFrame(offline: "y", sender: "b"))"])
        XCTAssertEqual(harness.relay.queueDepth.messages, 2)
        XCTAssertEqual(harness.relay.queueDepth.bytes, 2 * size)
    }

    func test_aSingleMessageLargerThanTheTotalBytesBoundIsAnsweredWithExpire() {
        let harness = RelayHarness(RelayConfiguration(maxQueuedBytes: 64))
        let a = harness.connect("a")
        let big = "\"" + String(repeating: "z", count: 64) + "\""
        XCTAssertEqual(harness.receive(a, frame("OFFER", to: "x", payload: big)), ["send a \(expireFrame(offline: "x", sender: "a"))"])
        XCTAssertEqual(harness.relay.queueDepth.messages, 0)
    }

    func test_anOverflowDoesNotDisturbTheMessagesAlreadyQueued() {
        let harness = RelayHarness(RelayConfiguration(maxQueuedPerDestination: 1))
        let a = harness.connect("a")
        harness.receive(a, frame("OFFER", to: "x", payload: "1"))
        harness.receive(a, frame("OFFER", to: "x", payload: "2"))
        let (_, effects) = harness.open("x", query: ["key": "peerjs", "id": "x", "token": "t"])
        XCTAssertEqual(effects, ["send x \(openFrame)", "send x \(relayed("OFFER", from: "a", to: "x", payload: "1"))"])
    }

    func test_deliveringAQueueMakesRoomUnderTheBounds() {
        let harness = RelayHarness(RelayConfiguration(maxQueuedPerSender: 1, maxQueuedTotal: 1))
        let a = harness.connect("a")
        XCTAssertEqual(harness.receive(a, frame("OFFER", to: "x")), [])
        _ = harness.open("x", query: ["key": "peerjs", "id": "x", "token": "t"])
        XCTAssertEqual(harness.receive(a, frame("OFFER", to: "y")), [])
        XCTAssertEqual(harness.relay.queueDepth.messages, 1)
    }

    func test_expiryMakesRoomUnderTheBounds() {
        let harness = RelayHarness(RelayConfiguration(maxQueuedPerDestination: 1))
        let a = harness.connect("a")
        harness.receive(a, frame("OFFER", to: "x"))
        harness.at(milliseconds: 5001)
        XCTAssertEqual(harness.tick().count, 1)
        XCTAssertEqual(harness.receive(a, frame("OFFER", to: "x")), [])
        XCTAssertEqual(harness.relay.queueDepth.messages, 1)
    }
}
