import SwitchboardTesting
import XCTest

final class PeerJSRelayTests: XCTestCase {
    func test_aRelayedMessageHasSrcStampedAndKeysRebuiltInOrder() throws {
        let daemon = try TestDaemon()
        let alice = try daemon.peer(id: "alice")
        let bob = try daemon.peer(id: "bob")
        try alice.send(#"{"payload":{"sdp":{"type":"offer","sdp":"v=0\r\n"},"type":"media","connectionId":"mc_1"},"src":"forged","dst":"bob","type":"OFFER","extra":true}"#)
        XCTAssertEqual(
            try bob.next(),
            .text(#"{"type":"OFFER","src":"alice","dst":"bob","payload":{"sdp":{"type":"offer","sdp":"v=0\r\n"},"type":"media","connectionId":"mc_1"}}"#))
    }

    func test_aMissingPayloadStaysMissingAndNullStaysNull() throws {
        let daemon = try TestDaemon()
        let alice = try daemon.peer(id: "alice")
        let bob = try daemon.peer(id: "bob")
        try alice.send(#"{"type":"CANDIDATE","dst":"bob"}"#)
        try alice.send(#"{"type":"CANDIDATE","dst":"bob","payload":null}"#)
        XCTAssertEqual(try bob.next(), .text(#"{"type":"CANDIDATE","src":"alice","dst":"bob"}"#))
        XCTAssertEqual(try bob.next(), .text(#"{"type":"CANDIDATE","src":"alice","dst":"bob","payload":null}"#))
    }

    func test_sendingToYourselfWorksAndNothingIsEchoed() throws {
        let daemon = try TestDaemon()
        let alice = try daemon.peer(id: "alice")
        try alice.send(#"{"type":"OFFER","dst":"alice","payload":"self"}"#)
        XCTAssertEqual(try alice.next(), .text(#"{"type":"OFFER","src":"alice","dst":"alice","payload":"self"}"#))
    }

    func test_messagesToAnOfflinePeerAreDeliveredInOrderRightAfterOpen() throws {
        let daemon = try TestDaemon()
        let alice = try daemon.peer(id: "alice")
        try alice.send(#"{"type":"OFFER","dst":"late","payload":1}"#)
        try alice.send(#"{"type":"CANDIDATE","dst":"late","payload":2}"#)
        try alice.send(#"{"type":"LEAVE","dst":"late"}"#)
        try alice.send(#"{"type":"HEARTBEAT"}"#)
        let late = try daemon.peer(id: "late")
        XCTAssertEqual(try late.next(), .text(#"{"type":"OFFER","src":"alice","dst":"late","payload":1}"#))
        XCTAssertEqual(try late.next(), .text(#"{"type":"CANDIDATE","src":"alice","dst":"late","payload":2}"#))
        try alice.send(#"{"type":"ANSWER","dst":"late","payload":3}"#)
        XCTAssertEqual(try late.next(), .text(#"{"type":"ANSWER","src":"alice","dst":"late","payload":3}"#), "LEAVE to an offline peer must have been dropped")
    }

    func test_anUndeliveredMessageExpiresAfterExpireTimeoutWithOneExpirePerPair() throws {
        let daemon = try TestDaemon(["peerjs.expire_timeout": .int(300)])
        let alice = try daemon.peer(id: "alice")
        let sent = ContinuousClock.now
        try alice.send(#"{"type":"OFFER","dst":"ghost","payload":1}"#)
        try alice.send(#"{"type":"CANDIDATE","dst":"ghost","payload":2}"#)
        XCTAssertEqual(try alice.next(), .text(#"{"type":"EXPIRE","src":"ghost","dst":"alice"}"#))
        XCTAssertGreaterThanOrEqual(ContinuousClock.now - sent, .milliseconds(300))
        try alice.send(#"{"type":"OFFER","dst":"alice","payload":"marker"}"#)
        XCTAssertEqual(try alice.next(), .text(#"{"type":"OFFER","src":"alice","dst":"alice","payload":"marker"}"#), "only one EXPIRE per (sender, dst)")
        let ghost = try daemon.peer(id: "ghost")
        try alice.send(#"{"type":"OFFER","dst":"ghost","payload":"fresh"}"#)
        XCTAssertEqual(try ghost.next(), .text(#"{"type":"OFFER","src":"alice","dst":"ghost","payload":"fresh"}"#), "expired messages are dropped")
    }

    func test_aFullQueueIsAnsweredWithExpireAtOnce() throws {
        let daemon = try TestDaemon(["peerjs.queue.per_destination": .int(2), "peerjs.expire_timeout": .int(60000)])
        let alice = try daemon.peer(id: "alice")
        for index in 0..<3 { try alice.send(#"{"type":"OFFER","dst":"ghost","payload":\#(index)}"#) }
        XCTAssertEqual(try alice.next(timeout: .seconds(2)), .text(#"{"type":"EXPIRE","src":"ghost","dst":"alice"}"#))
    }

    func test_malformedFramesAreIgnoredAndTheSocketKeepsWorking() throws {
        let daemon = try TestDaemon()
        let alice = try daemon.peer(id: "alice")
        let bob = try daemon.peer(id: "bob")
        for junk in ["not json", "", #"{"type":"OFFER","dst":"bob""#, "42", "null", "[1,2]", #"{"type":"UNKNOWN","dst":"bob"}"#] {
            try alice.send(junk)
        }
        try alice.send(#"{"type":"OFFER","dst":"bob","payload":"still works"}"#)
        XCTAssertEqual(try bob.next(), .text(#"{"type":"OFFER","src":"alice","dst":"bob","payload":"still works"}"#))
    }

    func test_aFloodOfMalformedFramesClosesTheSocketWith1008() throws {
        let daemon = try TestDaemon(["peerjs.malformed.burst": .double(3), "peerjs.malformed.rate": .double(0)])
        let alice = try daemon.peer(id: "alice")
        for _ in 0..<5 { try alice.send("garbage") }
        XCTAssertEqual(try alice.awaitClose(), 1008)
    }

    func test_aFragmentedMessageIsReassembledAndRelayed() throws {
        let daemon = try TestDaemon()
        let alice = try daemon.peer(id: "alice")
        let bob = try daemon.peer(id: "bob")
        let sdp = String(repeating: "a=candidate:1 1 udp 2122260223 10.0.0.1 5000 typ host\\r\\n", count: 40)
        try alice.sendFragmented(#"{"type":"OFFER","dst":"bob","payload":{"sdp":"\#(sdp)"}}"#, pieces: 5)
        XCTAssertEqual(try bob.next(), .text(#"{"type":"OFFER","src":"alice","dst":"bob","payload":{"sdp":"\#(sdp)"}}"#))
    }

    func test_aBinaryFrameHoldingJSONIsRelayedAsText() throws {
        let daemon = try TestDaemon()
        let alice = try daemon.peer(id: "alice")
        let bob = try daemon.peer(id: "bob")
        try alice.sendBinary(Array(#"{"type":"ANSWER","dst":"bob","payload":"bin"}"#.utf8))
        XCTAssertEqual(try bob.next(), .text(#"{"type":"ANSWER","src":"alice","dst":"bob","payload":"bin"}"#))
    }

    func test_aFrameOverMaxMessageBytesClosesWith1009() throws {
        let daemon = try TestDaemon(["transport.max_message_bytes": .int(1024)])
        let alice = try daemon.peer(id: "alice")
        try alice.send(#"{"type":"OFFER","dst":"x","payload":""# + String(repeating: "x", count: 2000) + #""}"#)
        XCTAssertEqual(try alice.awaitClose(), 1009)
    }

    func test_aFragmentedMessageOverTheLimitAlsoClosesWith1009() throws {
        let daemon = try TestDaemon(["transport.max_message_bytes": .int(1024)])
        let alice = try daemon.peer(id: "alice")
        // The daemon may close while the last fragments are still on their way (EPIPE here).
        try? alice.sendFragmented(String(repeating: "y", count: 3000), pieces: 6)
        XCTAssertEqual(try alice.awaitClose(), 1009)
    }

    func test_invalidUTF8InATextFrameClosesWith1007() throws {
        let daemon = try TestDaemon()
        let alice = try daemon.peer(id: "alice")
        try alice.sendFrame(opcode: 0x1, payload: [0x7B, 0xFF, 0xFE, 0x7D])
        XCTAssertEqual(try alice.awaitClose(), 1007)
    }

    func test_leaveWithoutDstFreesTheIdForAnotherToken() throws {
        let daemon = try TestDaemon()
        let alice = try daemon.peer(id: "alice", token: "one")
        try alice.send(#"{"type":"LEAVE"}"#)
        try alice.send(#"{"type":"OFFER","dst":"alice","payload":"after leave"}"#)
        _ = try daemon.peer(id: "alice", token: "two")
    }

    func test_aSilentPeerIsClosedAfterAliveTimeoutAndItsIdFreed() throws {
        let daemon = try TestDaemon(["peerjs.alive_timeout": .int(1000)])
        let silent = try daemon.peer(id: "quiet", token: "one")
        XCTAssertNotNil(try silent.awaitClose(timeout: .seconds(10)))
        _ = try daemon.peer(id: "quiet", token: "two")
    }

    func test_aConsumerThatDoesNotReadIsClosedAndTheSenderGetsLeave() throws {
        let daemon = try TestDaemon(["transport.outbox_bytes": .int(262_144), "transport.max_message_bytes": .int(65536), "peerjs.queue.per_destination": .int(2)])
        let sender = try daemon.peer(id: "sender")
        let stuck = try daemon.peer(id: "stuck")
        let blob = String(repeating: "z", count: 60000)
        var leave: WebSocketTestClient.Frame?
        for index in 0..<400 where leave == nil {
            try sender.send(#"{"type":"CANDIDATE","dst":"stuck","payload":{"n":\#(index),"blob":"\#(blob)"}}"#)
            if index % 20 == 19, let frame = try? sender.next(timeout: .milliseconds(50)) { leave = frame }
        }
        if leave == nil { leave = try sender.next(timeout: .seconds(5)) }
        XCTAssertEqual(leave, .text(#"{"type":"LEAVE","src":"stuck","dst":"sender"}"#))
        _ = stuck
        _ = try daemon.peer(id: "stuck", token: "other")
    }
}
