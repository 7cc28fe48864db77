import SwitchboardCore
import XCTest

final class PeerRelayHandshakeTests: XCTestCase {
    private let missing = #"{"type":"ERROR","payload":{"msg":"No id, token, or key supplied to websocket server"}}"#
    private let invalidKey = #"{"type":"ERROR","payload":{"msg":"Invalid key provided"}}"#
    private let idTaken = #"{"type":"ID-TAKEN","payload":{"msg":"ID is taken"}}"#
    private let limit = #"{"type":"ERROR","payload":{"msg":"Server has reached its concurrent user limit"}}"#

    private func assertRefusedForMissingParameters(
        _ query: [String: String], file: StaticString = #filePath, line: UInt = #line
    ) {
        let harness = RelayHarness()
        let (_, effects) = harness.open("s", query: query)
        XCTAssertEqual(effects, ["send s \(missing)", "close s 1008"], file: file, line: line)
        XCTAssertEqual(harness.relay.registeredPeers, [], file: file, line: line)
        XCTAssertEqual(harness.relay.stats.refused, ["missing_parameters": 1], file: file, line: line)
    }

    // MARK: Parameters

    func test_missingKeyIsAnsweredWithTheMissingParametersErrorThenAClose() {
        assertRefusedForMissingParameters(["id": "a", "token": "t"])
    }

    func test_emptyKeyIsAnsweredWithTheMissingParametersErrorThenAClose() {
        assertRefusedForMissingParameters(["key": "", "id": "a", "token": "t"])
    }

    func test_missingIdIsAnsweredWithTheMissingParametersErrorThenAClose() {
        assertRefusedForMissingParameters(["key": "peerjs", "token": "t"])
    }

    func test_emptyIdIsAnsweredWithTheMissingParametersErrorThenAClose() {
        assertRefusedForMissingParameters(["key": "peerjs", "id": "", "token": "t"])
    }

    func test_missingTokenIsAnsweredWithTheMissingParametersErrorThenAClose() {
        assertRefusedForMissingParameters(["key": "peerjs", "id": "a"])
    }

    func test_emptyTokenIsAnsweredWithTheMissingParametersErrorThenAClose() {
        assertRefusedForMissingParameters(["key": "peerjs", "id": "a", "token": ""])
    }

    func test_noParametersAtAllIsAnsweredWithTheMissingParametersErrorThenAClose() {
        assertRefusedForMissingParameters([:])
    }

    func test_missingParametersAreCheckedBeforeTheKey() {
        assertRefusedForMissingParameters(["key": "wrong", "id": "a"])
    }

    func test_versionAndUnknownParametersAreIgnored() {
        let harness = RelayHarness()
        let (_, effects) = harness.open(
            "a", query: ["key": "peerjs", "id": "a", "token": "t", "version": "1.5.4", "extra": "x"])
        XCTAssertEqual(effects, ["send a \(openFrame)"])
        XCTAssertEqual(harness.relay.registeredPeers, [PeerID("a")!])
    }

    // MARK: Key

    func test_wrongKeyIsAnsweredWithTheInvalidKeyErrorThenAClose() {
        let harness = RelayHarness()
        let (_, effects) = harness.open("s", query: ["key": "nope", "id": "a", "token": "t"])
        XCTAssertEqual(effects, ["send s \(invalidKey)", "close s 1008"])
        XCTAssertFalse(harness.isRegistered("a"))
        XCTAssertEqual(harness.relay.stats.refused, ["invalid_key": 1])
    }

    func test_keyIsComparedCaseSensitively() {
        let harness = RelayHarness()
        let (_, effects) = harness.open("s", query: ["key": "PeerJS", "id": "a", "token": "t"])
        XCTAssertEqual(effects, ["send s \(invalidKey)", "close s 1008"])
    }

    func test_configuredKeyIsTheOneAccepted() {
        let harness = RelayHarness(RelayConfiguration(key: "secret-key"))
        let (_, refused) = harness.open("s", query: ["key": "peerjs", "id": "a", "token": "t"])
        XCTAssertEqual(refused, ["send s \(invalidKey)", "close s 1008"])
        let (_, accepted) = harness.open("a", query: ["key": "secret-key", "id": "a", "token": "t"])
        XCTAssertEqual(accepted, ["send a \(openFrame)"])
    }

    func test_wrongKeyIsCheckedBeforeTheIdTakenCheck() {
        let harness = RelayHarness()
        harness.connect("a", token: "t1")
        let (_, effects) = harness.open("s", query: ["key": "nope", "id": "a", "token": "t2"])
        XCTAssertEqual(effects, ["send s \(invalidKey)", "close s 1008"])
    }

    // MARK: Id taken

    func test_idRegisteredUnderAnotherTokenIsAnsweredWithIdTakenThenAClose() {
        let harness = RelayHarness()
        let first = harness.connect("a", token: "t1")
        let (_, effects) = harness.open("s", query: ["key": "peerjs", "id": "a", "token": "t2"])
        XCTAssertEqual(effects, ["send s \(idTaken)", "close s 1008"])
        XCTAssertEqual(harness.relay.connection(of: PeerID("a")!), first)
        XCTAssertEqual(harness.relay.stats.refused, ["id_taken": 1])
    }

    func test_theRefusedSocketDoesNotDisturbTheHolderOfTheId() {
        let harness = RelayHarness()
        let a = harness.connect("a", token: "t1")
        let b = harness.connect("b")
        let (intruder, _) = harness.open("s", query: ["key": "peerjs", "id": "a", "token": "t2"])
        harness.close(intruder)
        XCTAssertEqual(harness.receive(b, frame("OFFER", to: "a")), ["send a \(relayed("OFFER", from: "b", to: "a")) receipt b->a"])
        XCTAssertEqual(harness.relay.connection(of: PeerID("a")!), a)
    }

    func test_messagesFromARefusedSocketAreIgnored() {
        let harness = RelayHarness()
        harness.connect("b")
        let (refused, _) = harness.open("s", query: ["key": "nope", "id": "a", "token": "t"])
        XCTAssertEqual(harness.receive(refused, frame("OFFER", to: "b")), [])
        XCTAssertEqual(harness.relay.queueDepth.messages, 0)
    }

    func test_idTakenIsCheckedBeforeTheConcurrentLimit() {
        let harness = RelayHarness(RelayConfiguration(concurrentLimit: 1))
        harness.connect("a", token: "t1")
        let (_, effects) = harness.open("s", query: ["key": "peerjs", "id": "a", "token": "t2"])
        XCTAssertEqual(effects, ["send s \(idTaken)", "close s 1008"])
    }

    // MARK: Concurrent limit

    func test_aNewIdAtTheConcurrentLimitIsAnsweredWithTheLimitErrorThenAClose() {
        let harness = RelayHarness(RelayConfiguration(concurrentLimit: 2))
        harness.connect("a")
        harness.connect("b")
        let (_, effects) = harness.open("c", query: ["key": "peerjs", "id": "c", "token": "t"])
        XCTAssertEqual(effects, ["send c \(limit)", "close c 1013"])
        XCTAssertEqual(harness.relay.registeredPeers.map(\.rawValue), ["a", "b"])
        XCTAssertEqual(harness.relay.stats.refused, ["concurrent_limit": 1])
    }

    func test_aTakeoverAtTheConcurrentLimitIsAccepted() {
        let harness = RelayHarness(RelayConfiguration(concurrentLimit: 1))
        harness.connect("a", token: "t")
        harness.connect("a", token: "t", label: "a2")
        XCTAssertEqual(harness.relay.registeredPeers.map(\.rawValue), ["a"])
    }

    func test_anIdFreedByACloseMakesRoomUnderTheConcurrentLimit() {
        let harness = RelayHarness(RelayConfiguration(concurrentLimit: 1))
        let a = harness.connect("a")
        harness.close(a)
        harness.connect("b")
        XCTAssertEqual(harness.relay.registeredPeers.map(\.rawValue), ["b"])
    }

    // MARK: Success

    func test_aSuccessfulHandshakeIsAnsweredWithExactlyOpen() {
        let harness = RelayHarness()
        let connection = harness.newConnection("a")
        var effects: [RelayEffect] = []
        harness.relay.connectionOpened(connection, query: ["key": "peerjs", "id": "a", "token": "t"], now: .zero, into: &effects)
        XCTAssertEqual(effects, [.send(connection, Array(#"{"type":"OPEN"}"#.utf8), receipt: nil)])
        XCTAssertEqual(harness.relay.connection(of: PeerID("a")!), connection)
        XCTAssertEqual(harness.relay.peer(on: connection), PeerID("a")!)
    }

    func test_anIdLongerThanTheMaximumIsRefused() {
        let harness = RelayHarness()
        let long = String(repeating: "x", count: PeerID.maximumLength + 1)
        let (_, effects) = harness.open("s", query: ["key": "peerjs", "id": long, "token": "t"])
        XCTAssertEqual(effects, [#"send s {"type":"ERROR","payload":{"msg":"Invalid id"}}"#, "close s 1008"])
        XCTAssertEqual(harness.relay.registeredPeers, [])
    }

    func test_anIdOfExactlyTheMaximumLengthIsAccepted() {
        let harness = RelayHarness()
        let longest = String(repeating: "x", count: PeerID.maximumLength)
        harness.connect(longest, label: "a")
        XCTAssertTrue(harness.isRegistered(longest))
    }

    func test_openIsFollowedByQueuedMessagesInOrderWithTheirOriginalSource() {
        let harness = RelayHarness()
        let b = harness.connect("b")
        let c = harness.connect("c")
        harness.receive(b, frame("OFFER", to: "x", payload: "1"))
        harness.receive(c, frame("ANSWER", to: "x", payload: "2"))
        harness.receive(b, frame("CANDIDATE", to: "x", payload: "3"))
        harness.advance(milliseconds: 1000)
        let (_, effects) = harness.open("x", query: ["key": "peerjs", "id": "x", "token": "t"])
        XCTAssertEqual(effects, [
            "send x \(openFrame)",
            "send x \(relayed("OFFER", from: "b", to: "x", payload: "1"))",
            "send x \(relayed("ANSWER", from: "c", to: "x", payload: "2"))",
            "send x \(relayed("CANDIDATE", from: "b", to: "x", payload: "3"))",
        ])
        XCTAssertEqual(harness.relay.stats.deliveredFromQueue, 3)
        XCTAssertEqual(harness.relay.queueDepth.messages, 0)
        XCTAssertEqual(harness.relay.queueDepth.bytes, 0)
        XCTAssertEqual(harness.relay.queuedDestinations, 0)
    }

    func test_queuedMessagesAreDeliveredOnlyOnce() {
        let harness = RelayHarness()
        let b = harness.connect("b")
        harness.receive(b, frame("OFFER", to: "x"))
        let (x, first) = harness.open("x", query: ["key": "peerjs", "id": "x", "token": "t"])
        XCTAssertEqual(first.count, 2)
        harness.close(x)
        let (_, second) = harness.open("x2", query: ["key": "peerjs", "id": "x", "token": "t"])
        XCTAssertEqual(second, ["send x2 \(openFrame)"])
    }

    func test_queuedMessagesForOtherIdsStayQueued() {
        let harness = RelayHarness()
        let b = harness.connect("b")
        harness.receive(b, frame("OFFER", to: "x"))
        harness.receive(b, frame("OFFER", to: "y"))
        let (_, effects) = harness.open("y", query: ["key": "peerjs", "id": "y", "token": "t"])
        XCTAssertEqual(effects, ["send y \(openFrame)", "send y \(relayed("OFFER", from: "b", to: "y"))"])
        XCTAssertEqual(harness.relay.queueDepth.messages, 1)
        XCTAssertEqual(harness.relay.queuedDestinations, 1)
    }

    // MARK: Takeover

    func test_takeoverWithTheSameTokenAnswersTheNewSocketWithOpen() {
        let harness = RelayHarness()
        let old = harness.connect("a", token: "t", label: "old")
        let (new, effects) = harness.open("new", query: ["key": "peerjs", "id": "a", "token": "t"])
        XCTAssertEqual(effects, ["send new \(openFrame)"])
        XCTAssertNotEqual(old, new)
        XCTAssertEqual(harness.relay.connection(of: PeerID("a")!), new)
    }

    func test_relaysGoToTheNewSocketAfterTakeover() {
        let harness = RelayHarness()
        harness.connect("a", token: "t", label: "old")
        harness.connect("a", token: "t", label: "new")
        let b = harness.connect("b")
        XCTAssertEqual(harness.receive(b, frame("OFFER", to: "a")), ["send new \(relayed("OFFER", from: "b", to: "a")) receipt b->a"])
    }

    func test_closingTheOldSocketAfterTakeoverKeepsTheIdRegistered() {
        let harness = RelayHarness()
        let old = harness.connect("a", token: "t", label: "old")
        let new = harness.connect("a", token: "t", label: "new")
        harness.close(old)
        XCTAssertEqual(harness.relay.connection(of: PeerID("a")!), new)
        let b = harness.connect("b")
        XCTAssertEqual(harness.receive(b, frame("OFFER", to: "a")), ["send new \(relayed("OFFER", from: "b", to: "a")) receipt b->a"])
        let (_, intruder) = harness.open("s", query: ["key": "peerjs", "id": "a", "token": "other"])
        XCTAssertEqual(intruder, ["send s \(idTaken)", "close s 1008"])
    }

    func test_closingTheNewSocketAfterTakeoverFreesTheId() {
        let harness = RelayHarness()
        harness.connect("a", token: "t", label: "old")
        let new = harness.connect("a", token: "t", label: "new")
        harness.close(new)
        XCTAssertFalse(harness.isRegistered("a"))
        harness.connect("a", token: "another", label: "claimer")
        XCTAssertTrue(harness.isRegistered("a"))
    }

    func test_closingTheOldSocketAfterTheNewOneClosedDoesNotFreeAReclaimedId() {
        let harness = RelayHarness()
        let old = harness.connect("a", token: "t", label: "old")
        let new = harness.connect("a", token: "t", label: "new")
        harness.close(new)
        let claimer = harness.connect("a", token: "other", label: "claimer")
        harness.close(old)
        XCTAssertEqual(harness.relay.connection(of: PeerID("a")!), claimer)
    }

    func test_theIdIsFreedWhenItsSocketClosesAndAnotherTokenCanClaimItAtOnce() {
        let harness = RelayHarness()
        let a = harness.connect("a", token: "t1")
        harness.close(a)
        XCTAssertFalse(harness.isRegistered("a"))
        XCTAssertEqual(harness.relay.socketCount, 0)
        harness.connect("a", token: "t2", label: "a2")
    }

    func test_noLeaveIsSynthesizedWhenAPeerSocketCloses() {
        let harness = RelayHarness()
        let a = harness.connect("a")
        let b = harness.connect("b")
        XCTAssertEqual(harness.receive(a, frame("OFFER", to: "b")).count, 1)
        harness.close(b)
        harness.advance(milliseconds: 1000)
        XCTAssertEqual(harness.tick(), [])
        // The next message to b is queued, not answered.
        XCTAssertEqual(harness.receive(a, frame("CANDIDATE", to: "b")), [])
        XCTAssertEqual(harness.relay.queueDepth.messages, 1)
    }
}
