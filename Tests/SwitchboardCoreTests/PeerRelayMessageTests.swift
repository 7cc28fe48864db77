import SwitchboardCore
import XCTest

final class PeerRelayMessageTests: XCTestCase {
    // MARK: Relay

    func test_anOfferIsRelayedWithTheSendersIdStampedAsSrcAndTheExactBytes() {
        let harness = RelayHarness()
        let a = harness.connect("a")
        let b = harness.connect("b")
        let input = #"{"type":"OFFER","src":"forged","dst":"b","payload":{"sdp":{"type":"offer","sdp":"v=0\r\n"},"type":"data","connectionId":"dc_1"}}"#
        let effects = harness.receiveRaw(a, Array(input.utf8))
        let expected = #"{"type":"OFFER","src":"a","dst":"b","payload":{"sdp":{"type":"offer","sdp":"v=0\r\n"},"type":"data","connectionId":"dc_1"}}"#
        XCTAssertEqual(effects, [.send(b, Array(expected.utf8), receipt: receipt("a", "b"))])
        XCTAssertEqual(harness.relay.stats.relayed, [.offer: 1])
    }

    func test_relayedKeysAreRebuiltInTheOrderTypeSrcDstPayloadDroppingOtherKeys() {
        let harness = RelayHarness()
        let a = harness.connect("a")
        let b = harness.connect("b")
        let input = #"{ "payload" : [1, 2] , "extra":true, "dst":"b", "src":"zz", "type":"ANSWER" }"#
        let effects = harness.receiveRaw(a, Array(input.utf8))
        XCTAssertEqual(effects, [.send(b, Array(#"{"type":"ANSWER","src":"a","dst":"b","payload":[1, 2]}"#.utf8), receipt: receipt("a", "b"))])
    }

    func test_payloadBytesAreCopiedUntouchedIncludingEscapesWhitespaceAndNumbers() {
        let harness = RelayHarness()
        let a = harness.connect("a")
        let b = harness.connect("b")
        let payload = #"{ "text" : "caf\u00e9 \ud83d\ude00 \"q\" \\ \/" , "n": -1.50E+3, "deep": {"a": [ {"b": null} ]}, "raw": "é😀" }"#
        let effects = harness.receiveRaw(a, Array(#"{"type":"CANDIDATE","dst":"b","payload":"#.utf8) + Array(payload.utf8) + [UInt8(ascii: "}")])
        let expected = Array(#"{"type":"CANDIDATE","src":"a","dst":"b","payload":"#.utf8) + Array(payload.utf8) + [UInt8(ascii: "}")]
        XCTAssertEqual(effects, [.send(b, expected, receipt: receipt("a", "b"))])
    }

    func test_aNullPayloadStaysNull() {
        let harness = RelayHarness()
        let a = harness.connect("a")
        harness.connect("b")
        XCTAssertEqual(harness.receive(a, #"{"type":"OFFER","dst":"b","payload":null}"#), [#"send b {"type":"OFFER","src":"a","dst":"b","payload":null} receipt a->b"#])
    }

    func test_aMissingPayloadStaysMissing() {
        let harness = RelayHarness()
        let a = harness.connect("a")
        harness.connect("b")
        XCTAssertEqual(harness.receive(a, #"{"type":"OFFER","dst":"b"}"#), [#"send b {"type":"OFFER","src":"a","dst":"b"} receipt a->b"#])
    }

    func test_thePayloadMayBeAnyJSONValue() {
        let harness = RelayHarness()
        let a = harness.connect("a")
        harness.connect("b")
        for payload in [#""text""#, "0", "-2.5e-3", "true", "false", "[]", #"[{"x":[]}]"#, "{}"] {
            XCTAssertEqual(
                harness.receive(a, frame("OFFER", to: "b", payload: payload)),
                ["send b \(relayed("OFFER", from: "a", to: "b", payload: payload)) receipt a->b"], payload)
        }
    }

    func test_everyRelayedTypeReachesAConnectedDestination() {
        let harness = RelayHarness()
        let a = harness.connect("a")
        harness.connect("b")
        for type in ["OFFER", "ANSWER", "CANDIDATE", "LEAVE", "EXPIRE"] {
            XCTAssertEqual(harness.receive(a, frame(type, to: "b")), ["send b \(relayed(type, from: "a", to: "b")) receipt a->b"], type)
        }
        XCTAssertEqual(harness.relay.stats.relayed, [.offer: 1, .answer: 1, .candidate: 1, .leave: 1, .expire: 1])
        XCTAssertTrue(harness.isRegistered("a"))
    }

    func test_sendingToYourselfIsRelayedBackToTheSender() {
        let harness = RelayHarness()
        let a = harness.connect("a")
        XCTAssertEqual(harness.receive(a, frame("OFFER", to: "a")), ["send a \(relayed("OFFER", from: "a", to: "a")) receipt a->a"])
    }

    func test_nothingIsEchoedToTheSender() {
        let harness = RelayHarness()
        let a = harness.connect("a")
        harness.connect("b")
        let effects = harness.receive(a, frame("OFFER", to: "b"))
        XCTAssertEqual(effects.filter { $0.hasPrefix("send a ") }, [])
        XCTAssertEqual(effects.count, 1)
    }

    func test_relayIsFirstInFirstOutPerSendingSocket() {
        let harness = RelayHarness()
        let a = harness.connect("a")
        harness.connect("b")
        harness.connect("c")
        var effects: [String] = []
        for (index, destination) in ["b", "c", "b", "b", "c"].enumerated() {
            effects += harness.receive(a, frame("CANDIDATE", to: destination, payload: "\(index)"))
        }
        XCTAssertEqual(effects, [
            "send b \(relayed("CANDIDATE", from: "a", to: "b", payload: "0")) receipt a->b",
            "send c \(relayed("CANDIDATE", from: "a", to: "c", payload: "1")) receipt a->c",
            "send b \(relayed("CANDIDATE", from: "a", to: "b", payload: "2")) receipt a->b",
            "send b \(relayed("CANDIDATE", from: "a", to: "b", payload: "3")) receipt a->b",
            "send c \(relayed("CANDIDATE", from: "a", to: "c", payload: "4")) receipt a->c",
        ])
    }

    func test_aBinaryFrameHoldingJSONIsHandledLikeTextAndRelayedAsText() {
        let harness = RelayHarness()
        let a = harness.connect("a")
        let b = harness.connect("b")
        let effects = harness.receiveRaw(a, Array(frame("OFFER", to: "b").utf8), isBinary: true)
        XCTAssertEqual(effects, [.send(b, Array(relayed("OFFER", from: "a", to: "b").utf8), receipt: receipt("a", "b"))])
    }

    func test_aBinaryFrameWithValidMultibyteUTF8IsRelayed() {
        let harness = RelayHarness()
        let a = harness.connect("a")
        harness.connect("b")
        XCTAssertEqual(
            harness.receive(a, frame("OFFER", to: "b", payload: #""ünï😀""#), isBinary: true),
            ["send b \(relayed("OFFER", from: "a", to: "b", payload: #""ünï😀""#)) receipt a->b"])
    }

    func test_anEscapedDstIsDecodedBeforeLookupAndRelayedDecoded() {
        let harness = RelayHarness()
        let a = harness.connect("a")
        harness.connect("b")
        XCTAssertEqual(harness.receive(a, #"{"type":"OFFER","dst":"\u0062"}"#), [#"send b {"type":"OFFER","src":"a","dst":"b"} receipt a->b"#])
    }

    func test_anEscapedTypeKeyIsUnderstood() {
        let harness = RelayHarness()
        let a = harness.connect("a")
        harness.connect("b")
        XCTAssertEqual(harness.receive(a, #"{"\u0074ype":"OFFER","dst":"b"}"#), [#"send b {"type":"OFFER","src":"a","dst":"b"} receipt a->b"#])
    }

    func test_theLastOfDuplicateKeysWinsAsInJSONParse() {
        let harness = RelayHarness()
        let a = harness.connect("a")
        harness.connect("b")
        harness.connect("c")
        XCTAssertEqual(
            harness.receive(a, #"{"type":"HEARTBEAT","dst":"c","payload":1,"type":"ANSWER","dst":"b","payload":2}"#),
            [#"send b {"type":"ANSWER","src":"a","dst":"b","payload":2} receipt a->b"#])
    }

    func test_idsNeedingEscapesAreEscapedInTheRelayedFrame() {
        let harness = RelayHarness()
        let a = harness.connect(#"a"\"#, label: "a")
        harness.connect("b")
        XCTAssertEqual(harness.receive(a, frame("OFFER", to: "b", payload: nil)), [#"send b {"type":"OFFER","src":"a\"\\","dst":"b"} receipt a"\->b"#])
    }

    // MARK: Ignored

    func test_anUnknownTypeIsIgnored() {
        let harness = RelayHarness()
        let a = harness.connect("a")
        harness.connect("b")
        for type in ["offer", "Offer", "OPEN", "ERROR", "ID-TAKEN", "PING", ""] {
            XCTAssertEqual(harness.receive(a, frame(type, to: "b")), [], type)
        }
        XCTAssertEqual(harness.relay.stats.ignored, 7)
        XCTAssertEqual(harness.relay.stats.malformed, 0)
        XCTAssertEqual(harness.relay.queueDepth.messages, 0)
    }

    func test_aFrameWithoutTypeIsIgnored() {
        let harness = RelayHarness()
        let a = harness.connect("a")
        harness.connect("b")
        XCTAssertEqual(harness.receive(a, #"{"dst":"b","payload":{}}"#), [])
        XCTAssertEqual(harness.receive(a, "{}"), [])
        XCTAssertEqual(harness.relay.stats.ignored, 2)
    }

    func test_aNonStringTypeIsIgnored() {
        let harness = RelayHarness()
        let a = harness.connect("a")
        harness.connect("b")
        for type in ["1", "null", "true", #"["OFFER"]"#, #"{"OFFER":1}"#] {
            XCTAssertEqual(harness.receive(a, #"{"type":"# + type + #","dst":"b"}"#), [], type)
        }
        XCTAssertEqual(harness.relay.stats.ignored, 5)
        XCTAssertEqual(harness.relay.stats.malformed, 0)
    }

    func test_anIgnoredFrameDoesNotUnregisterTheSender() {
        let harness = RelayHarness()
        let a = harness.connect("a")
        harness.receive(a, #"{"type":"nonsense"}"#)
        XCTAssertTrue(harness.isRegistered("a"))
        XCTAssertEqual(harness.receive(a, frame("OFFER", to: "a")).count, 1)
    }

    func test_aHeartbeatIsNeitherAnsweredNorRelayed() {
        let harness = RelayHarness()
        let a = harness.connect("a")
        harness.connect("b")
        XCTAssertEqual(harness.receive(a, #"{"type":"HEARTBEAT"}"#), [])
        XCTAssertEqual(harness.receive(a, frame("HEARTBEAT", to: "b")), [])
        XCTAssertEqual(harness.receive(a, frame("HEARTBEAT", to: "offline")), [])
        XCTAssertEqual(harness.relay.stats.relayed, [:])
        XCTAssertEqual(harness.relay.queueDepth.messages, 0)
    }

    // MARK: Dropped

    func test_aMessageWithoutDstIsDroppedWithoutExpire() {
        let harness = RelayHarness()
        let a = harness.connect("a")
        XCTAssertEqual(harness.receive(a, #"{"type":"OFFER","payload":{}}"#), [])
        XCTAssertEqual(harness.relay.queueDepth.messages, 0)
        XCTAssertEqual(harness.relay.stats.dropped, 1)
        harness.advance(milliseconds: 10_000)
        XCTAssertEqual(harness.tick(), [])
    }

    func test_aMessageWithAnEmptyDstIsDroppedWithoutExpire() {
        let harness = RelayHarness()
        let a = harness.connect("a")
        XCTAssertEqual(harness.receive(a, frame("OFFER", to: "")), [])
        XCTAssertEqual(harness.relay.queueDepth.messages, 0)
        XCTAssertEqual(harness.relay.stats.dropped, 1)
        harness.advance(milliseconds: 10_000)
        XCTAssertEqual(harness.tick(), [])
    }

    func test_aMessageWithANonStringDstIsDroppedWithoutExpire() {
        let harness = RelayHarness()
        let a = harness.connect("a")
        XCTAssertEqual(harness.receive(a, #"{"type":"ANSWER","dst":42}"#), [])
        XCTAssertEqual(harness.relay.queueDepth.messages, 0)
        harness.advance(milliseconds: 10_000)
        XCTAssertEqual(harness.tick(), [])
    }

    func test_leaveToAnOfflinePeerIsDropped() {
        let harness = RelayHarness()
        let a = harness.connect("a")
        XCTAssertEqual(harness.receive(a, frame("LEAVE", to: "x")), [])
        XCTAssertEqual(harness.relay.queueDepth.messages, 0)
        XCTAssertEqual(harness.relay.stats.dropped, 1)
        XCTAssertTrue(harness.isRegistered("a"))
        harness.advance(milliseconds: 10_000)
        XCTAssertEqual(harness.tick(), [])
        harness.connect("x")
    }

    func test_expireToAnOfflinePeerIsDropped() {
        let harness = RelayHarness()
        let a = harness.connect("a")
        XCTAssertEqual(harness.receive(a, frame("EXPIRE", to: "x")), [])
        XCTAssertEqual(harness.relay.queueDepth.messages, 0)
        XCTAssertEqual(harness.relay.stats.dropped, 1)
        harness.advance(milliseconds: 10_000)
        XCTAssertEqual(harness.tick(), [])
        harness.connect("x")
    }

    func test_offerAnswerAndCandidateToAnOfflinePeerAreQueuedSilently() {
        let harness = RelayHarness()
        let a = harness.connect("a")
        var bytes = 0
        for type in ["OFFER", "ANSWER", "CANDIDATE"] {
            XCTAssertEqual(harness.receive(a, frame(type, to: "x")), [], type)
            bytes += relayed(type, from: "a", to: "x").utf8.count
        }
        XCTAssertEqual(harness.relay.queueDepth.messages, 3)
        XCTAssertEqual(harness.relay.queueDepth.bytes, bytes)
        XCTAssertEqual(harness.relay.queuedDestinations, 1)
        XCTAssertEqual(harness.relay.stats.queued, 3)
        XCTAssertEqual(harness.relay.stats.relayed, [:])
    }

    func test_aMessageToAnIdTooLongToRegisterIsQueuedAndExpires() {
        let harness = RelayHarness()
        let a = harness.connect("a")
        let long = String(repeating: "y", count: PeerID.maximumLength + 1)
        XCTAssertEqual(harness.receive(a, frame("OFFER", to: long)), [])
        harness.advance(milliseconds: 5001)
        XCTAssertEqual(harness.tick(), ["send a \(expireFrame(offline: long, sender: "a"))"])
    }

    // MARK: Rate

    func test_aSocketFloodingAtManyTimesItsRateIsClosedOnceEvenThoughSomeMessagesGetThrough() {
        let harness = RelayHarness(RelayConfiguration(messageRate: 100, messageBurst: 20))
        let a = harness.connect("a")
        let b = harness.connect("b")
        var relayed = 0
        var closes: [String] = []
        for index in 0..<400 {  // 2,000 a second for 0.2 s
            harness.at(milliseconds: Int64(index / 2))
            let effects = harness.receive(a, #"{"type":"CANDIDATE","dst":"b","payload":{}}"#)
            relayed += effects.count { $0.hasPrefix("send b ") }
            closes += effects.filter { $0.hasPrefix("close ") }
        }
        XCTAssertEqual(closes, ["close a 1008"], "closed once, as a flood")
        XCTAssertGreaterThan(relayed, 20, "messages the refill allowed were relayed up to the close")
        XCTAssertEqual(harness.receive(b, #"{"type":"CANDIDATE","dst":"a","payload":{}}"#).count, 1, "the other socket is unaffected")
    }
}
