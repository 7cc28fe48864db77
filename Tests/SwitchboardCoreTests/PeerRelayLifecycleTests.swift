import SwitchboardCore
import XCTest

final class PeerRelayLifecycleTests: XCTestCase {
    // MARK: LEAVE without dst

    func test_leaveWithoutDstUnregistersTheSenderButKeepsItsSocketOpen() {
        let harness = RelayHarness()
        let a = harness.connect("a")
        XCTAssertEqual(harness.receive(a, #"{"type":"LEAVE"}"#), [])
        XCTAssertFalse(harness.isRegistered("a"))
        XCTAssertEqual(harness.relay.socketCount, 1)
        XCTAssertNil(harness.relay.peer(on: a))
    }

    func test_framesAfterLeaveWithoutDstAreIgnored() {
        let harness = RelayHarness()
        let a = harness.connect("a")
        harness.connect("b")
        harness.receive(a, #"{"type":"LEAVE","payload":null}"#)
        XCTAssertEqual(harness.receive(a, frame("OFFER", to: "b")), [])
        XCTAssertEqual(harness.receive(a, frame("OFFER", to: "offline")), [])
        XCTAssertEqual(harness.relay.queueDepth.messages, 0)
    }

    func test_anIdFreedByLeaveCanBeClaimedByAnotherToken() {
        let harness = RelayHarness()
        let a = harness.connect("a", token: "t1")
        harness.receive(a, #"{"type":"LEAVE"}"#)
        let claimer = harness.connect("a", token: "t2", label: "claimer")
        XCTAssertEqual(harness.relay.connection(of: PeerID("a")!), claimer)
        // The leaver's later close does not free the claimer's id.
        harness.close(a)
        XCTAssertEqual(harness.relay.connection(of: PeerID("a")!), claimer)
    }

    func test_messagesToAnIdThatLeftAreQueued() {
        let harness = RelayHarness()
        let a = harness.connect("a")
        let b = harness.connect("b")
        harness.receive(a, #"{"type":"LEAVE"}"#)
        XCTAssertEqual(harness.receive(b, frame("OFFER", to: "a")), [])
        XCTAssertEqual(harness.relay.queueDepth.messages, 1)
    }

    func test_leaveWithoutDstFromTheOldSocketAfterTakeoverKeepsTheIdRegistered() {
        let harness = RelayHarness()
        let old = harness.connect("a", token: "t", label: "old")
        let new = harness.connect("a", token: "t", label: "new")
        XCTAssertEqual(harness.receive(old, #"{"type":"LEAVE"}"#), [])
        XCTAssertEqual(harness.relay.connection(of: PeerID("a")!), new)
    }

    // MARK: Delivery failure

    func test_aFailedDeliveryClosesTheDestinationAndSendsLeaveToTheSender() {
        let harness = RelayHarness()
        let a = harness.connect("a")
        let b = harness.connect("b")
        XCTAssertEqual(harness.receive(a, frame("OFFER", to: "b")).count, 1)
        XCTAssertEqual(harness.deliveryFailed(receipt("a", "b"), on: b), [
            "close b 1008",
            #"send a {"type":"LEAVE","src":"b","dst":"a"}"#,
        ])
        XCTAssertFalse(harness.isRegistered("b"))
        XCTAssertTrue(harness.isRegistered("a"))
        // b is offline now: the next message to it is queued.
        XCTAssertEqual(harness.receive(a, frame("CANDIDATE", to: "b")), [])
        XCTAssertEqual(harness.relay.queueDepth.messages, 1)
    }

    func test_aFailedDeliveryFreesTheIdForAnotherToken() {
        let harness = RelayHarness()
        harness.connect("a")
        let b = harness.connect("b", token: "t1")
        _ = harness.deliveryFailed(receipt("a", "b"), on: b)
        harness.connect("b", token: "t2", label: "b2")
        // The failed socket's close does not free the new holder's id.
        harness.close(b)
        XCTAssertTrue(harness.isRegistered("b"))
    }

    func test_framesFromASocketWhoseDeliveryFailedAreIgnored() {
        let harness = RelayHarness()
        harness.connect("a")
        let b = harness.connect("b")
        _ = harness.deliveryFailed(receipt("a", "b"), on: b)
        XCTAssertEqual(harness.receive(b, frame("OFFER", to: "a")), [])
    }

    func test_aFailedDeliveryWhoseSenderIsGoneSendsNoLeave() {
        let harness = RelayHarness()
        let a = harness.connect("a")
        let b = harness.connect("b")
        harness.close(a)
        XCTAssertEqual(harness.deliveryFailed(receipt("a", "b"), on: b), ["close b 1008"])
        XCTAssertFalse(harness.isRegistered("b"))
    }

    func test_aFailedDeliveryToYourselfClosesTheSocketWithoutLeave() {
        let harness = RelayHarness()
        let a = harness.connect("a")
        XCTAssertEqual(harness.deliveryFailed(receipt("a", "a"), on: a), ["close a 1008"])
        XCTAssertFalse(harness.isRegistered("a"))
    }

    // MARK: Liveness

    func test_aSocketSilentPastAliveTimeoutIsClosedAndItsIdFreed() {
        let harness = RelayHarness()
        harness.connect("a")
        harness.at(milliseconds: 59_999)
        XCTAssertEqual(harness.tick(), [])
        XCTAssertTrue(harness.isRegistered("a"))
        harness.at(milliseconds: 60_001)
        XCTAssertEqual(harness.tick(), ["close a 1000"])
        XCTAssertFalse(harness.isRegistered("a"))
        XCTAssertEqual(harness.relay.socketCount, 0)
        XCTAssertEqual(harness.relay.stats.timedOut, 1)
        harness.at(milliseconds: 200_000)
        XCTAssertEqual(harness.tick(), [])
    }

    func test_theAliveTimeoutIsTheConfiguredOne() {
        let harness = RelayHarness(RelayConfiguration(aliveTimeout: .milliseconds(1500)))
        harness.connect("a")
        harness.at(milliseconds: 1499)
        XCTAssertEqual(harness.tick(), [])
        harness.at(milliseconds: 1501)
        XCTAssertEqual(harness.tick(), ["close a 1000"])
    }

    func test_anIdFreedByAliveTimeoutCanBeClaimedByAnotherToken() {
        let harness = RelayHarness()
        harness.connect("a", token: "t1")
        harness.at(milliseconds: 60_001)
        _ = harness.tick()
        harness.connect("a", token: "t2", label: "a2")
    }

    func test_messagesToATimedOutPeerAreQueuedAgainAndDeliveredWhenItReturns() {
        let harness = RelayHarness()
        harness.connect("x")
        harness.at(milliseconds: 30_000)
        let a = harness.connect("a")
        harness.at(milliseconds: 60_001)
        XCTAssertEqual(harness.tick(), ["close x 1000"])
        XCTAssertEqual(harness.receive(a, frame("OFFER", to: "x")), [])
        XCTAssertEqual(harness.relay.queueDepth.messages, 1)
        let (_, effects) = harness.open("x2", query: ["key": "peerjs", "id": "x", "token": "t"])
        XCTAssertEqual(effects, ["send x2 \(openFrame)", "send x2 \(relayed("OFFER", from: "a", to: "x"))"])
    }

    func test_aHeartbeatRefreshesLiveness() {
        assertFrameRefreshesLiveness(#"{"type":"HEARTBEAT"}"#)
    }

    func test_aRelayedMessageRefreshesLiveness() {
        assertFrameRefreshesLiveness(frame("OFFER", to: "a"))
    }

    func test_anIgnoredFrameRefreshesLiveness() {
        assertFrameRefreshesLiveness(#"{"type":"WHATEVER"}"#)
    }

    func test_aMalformedFrameRefreshesLiveness() {
        assertFrameRefreshesLiveness("not json")
    }

    private func assertFrameRefreshesLiveness(_ text: String, file: StaticString = #filePath, line: UInt = #line) {
        let harness = RelayHarness()
        let a = harness.connect("a")
        harness.at(milliseconds: 50_000)
        harness.receive(a, text)
        harness.at(milliseconds: 60_001)
        XCTAssertEqual(harness.tick(), [], file: file, line: line)
        XCTAssertTrue(harness.isRegistered("a"), file: file, line: line)
        harness.at(milliseconds: 110_001)
        XCTAssertEqual(harness.tick(), ["close a 1000"], file: file, line: line)
    }

    func test_onlyTheSilentSocketIsClosed() {
        let harness = RelayHarness()
        harness.connect("a")
        let b = harness.connect("b")
        harness.at(milliseconds: 40_000)
        harness.receive(b, #"{"type":"HEARTBEAT"}"#)
        harness.at(milliseconds: 60_001)
        XCTAssertEqual(harness.tick(), ["close a 1000"])
        XCTAssertEqual(harness.relay.registeredPeers.map(\.rawValue), ["b"])
    }

    func test_aSilentOldSocketAfterTakeoverIsClosedWithoutFreeingTheId() {
        let harness = RelayHarness()
        harness.connect("a", token: "t", label: "old")
        harness.at(milliseconds: 30_000)
        let new = harness.connect("a", token: "t", label: "new")
        harness.at(milliseconds: 60_001)
        XCTAssertEqual(harness.tick(), ["close old 1000"])
        XCTAssertEqual(harness.relay.connection(of: PeerID("a")!), new)
        XCTAssertEqual(harness.relay.socketCount, 1)
    }

    func test_aRefusedSocketLeftOpenIsClosedAtAliveTimeout() {
        let harness = RelayHarness()
        _ = harness.open("s", query: ["key": "nope", "id": "a", "token": "t"])
        harness.at(milliseconds: 60_001)
        XCTAssertEqual(harness.tick(), ["close s 1000"])
        XCTAssertEqual(harness.relay.socketCount, 0)
    }

    func test_aSocketThatLeftIsClosedAtAliveTimeout() {
        let harness = RelayHarness()
        let a = harness.connect("a")
        harness.receive(a, #"{"type":"LEAVE"}"#)
        harness.at(milliseconds: 60_001)
        XCTAssertEqual(harness.tick(), ["close a 1000"])
    }

    func test_aClosedSocketIsNotSweptAgain() {
        let harness = RelayHarness()
        let a = harness.connect("a")
        harness.close(a)
        harness.at(milliseconds: 60_001)
        XCTAssertEqual(harness.tick(), [])
        XCTAssertEqual(harness.relay.stats.timedOut, 0)
    }

    func test_framesOnAnUnknownConnectionAreIgnored() {
        let harness = RelayHarness()
        harness.connect("b")
        let stranger = harness.newConnection("stranger")
        XCTAssertEqual(harness.receive(stranger, frame("OFFER", to: "b")), [])
        XCTAssertEqual(harness.receive(stranger, "garbage"), [])
        XCTAssertEqual(harness.relay.stats.malformed, 0)
    }

    // MARK: Operator disconnect

    func test_anOperatorDisconnectClosesTheSocketAndFreesTheId() {
        let harness = RelayHarness()
        let a = harness.connect("a")
        var effects: [RelayEffect] = []
        XCTAssertTrue(harness.relay.disconnect(PeerID("a")!, into: &effects))
        XCTAssertEqual(harness.render(effects), ["close a 1000"])
        XCTAssertFalse(harness.isRegistered("a"))
        XCTAssertEqual(harness.receive(a, frame("OFFER", to: "a")), [])
        var none: [RelayEffect] = []
        XCTAssertFalse(harness.relay.disconnect(PeerID("a")!, into: &none))
        XCTAssertEqual(none, [])
    }
}
