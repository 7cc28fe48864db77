import SwitchboardCore
import XCTest

final class PeerRelayMalformedFrameTests: XCTestCase {
    private static let deep = #"{"type":"OFFER","dst":"b","payload":"# + String(repeating: "[", count: 300)
        + String(repeating: "]", count: 300) + "}"

    /// Frames that are not one JSON object, each with a label.
    private static let malformedTexts: [(String, String)] = [
        ("not JSON", "hello"),
        ("empty", ""),
        ("whitespace only", " \n\t"),
        ("truncated", #"{"type":"OFFER","dst":"b""#),
        ("truncated string", #"{"type":"OFF"#),
        ("number", "42"),
        ("string", #""OFFER""#),
        ("true", "true"),
        ("null", "null"),
        ("array", #"[{"type":"OFFER","dst":"b"}]"#),
        ("trailing garbage", #"{"type":"OFFER","dst":"b"}x"#),
        ("two objects", #"{"type":"OFFER","dst":"b"}{}"#),
        ("single quotes", #"{'type':'OFFER'}"#),
        ("trailing comma", #"{"type":"OFFER","dst":"b",}"#),
        ("too deep", deep),
    ]

    func test_malformedFramesAreIgnoredAndCountedAndTheSocketStaysHealthy() {
        for (label, text) in Self.malformedTexts {
            let harness = RelayHarness()
            let a = harness.connect("a")
            harness.connect("b")
            XCTAssertEqual(harness.receive(a, text), [], label)
            XCTAssertEqual(harness.relay.stats.malformed, 1, label)
            XCTAssertEqual(harness.relay.stats.ignored, 0, label)
            XCTAssertTrue(harness.isRegistered("a"), label)
            XCTAssertEqual(harness.receive(a, frame("OFFER", to: "b")), ["send b \(relayed("OFFER", from: "a", to: "b")) receipt a->b"], label)
        }
    }

    func test_malformedFramesInBinaryAreIgnoredAndCounted() {
        for (label, text) in Self.malformedTexts {
            let harness = RelayHarness()
            let a = harness.connect("a")
            XCTAssertEqual(harness.receive(a, text, isBinary: true), [], label)
            XCTAssertEqual(harness.relay.stats.malformed, 1, label)
        }
    }

    func test_aBinaryFrameWithInvalidUTF8IsMalformed() {
        let harness = RelayHarness()
        let a = harness.connect("a")
        harness.connect("b")
        let bytes = Array(#"{"type":"OFFER","dst":"b","payload":""#.utf8) + [0xFF, 0xFE] + Array(#""}"#.utf8)
        XCTAssertEqual(harness.receiveRaw(a, bytes, isBinary: true), [])
        XCTAssertEqual(harness.relay.stats.malformed, 1)
        XCTAssertEqual(harness.relay.stats.relayed, [:])
    }

    func test_aBinaryFrameWithATruncatedMultibyteSequenceIsMalformed() {
        let harness = RelayHarness()
        let a = harness.connect("a")
        harness.connect("b")
        let bytes = Array(#"{"type":"OFFER","dst":"b","payload":""#.utf8) + [0xE2, 0x82] + Array(#""}"#.utf8)
        XCTAssertEqual(harness.receiveRaw(a, bytes, isBinary: true), [])
        XCTAssertEqual(harness.relay.stats.malformed, 1)
    }

    func test_pastTheMalformedBurstTheSocketIsClosedWith1008() {
        let harness = RelayHarness()  // burst 20, rate 5/s
        let a = harness.connect("a")
        for index in 1...20 {
            XCTAssertEqual(harness.receive(a, "bad"), [], "frame \(index)")
        }
        XCTAssertEqual(harness.receive(a, "bad"), ["close a 1008"])
        XCTAssertEqual(harness.relay.stats.malformed, 21)
    }

    func test_theMalformedBudgetRefillsAtTheConfiguredRate() {
        let harness = RelayHarness(RelayConfiguration(malformedRate: 2, malformedBurst: 3))
        let a = harness.connect("a")
        for _ in 1...3 { XCTAssertEqual(harness.receive(a, "bad"), []) }
        harness.at(milliseconds: 500)  // one token back
        XCTAssertEqual(harness.receive(a, "bad"), [])
        XCTAssertEqual(harness.receive(a, "bad"), ["close a 1008"])
    }

    func test_theMalformedBudgetIsPerSocket() {
        let harness = RelayHarness(RelayConfiguration(malformedRate: 0, malformedBurst: 1))
        let a = harness.connect("a")
        let b = harness.connect("b")
        XCTAssertEqual(harness.receive(a, "bad"), [])
        XCTAssertEqual(harness.receive(b, "bad"), [])
        XCTAssertEqual(harness.receive(a, "bad"), ["close a 1008"])
    }

    func test_validAndIgnoredFramesDoNotSpendTheMalformedBudget() {
        let harness = RelayHarness(RelayConfiguration(malformedRate: 0, malformedBurst: 1))
        let a = harness.connect("a")
        for _ in 1...10 {
            harness.receive(a, #"{"type":"HEARTBEAT"}"#)
            harness.receive(a, #"{"type":"unknown"}"#)
            harness.receive(a, frame("OFFER", to: "a"))
        }
        XCTAssertEqual(harness.receive(a, "bad"), [])
        XCTAssertEqual(harness.receive(a, "bad"), ["close a 1008"])
    }

    func test_anUnregisteredSocketIsAlsoClosedPastTheMalformedBurst() {
        let harness = RelayHarness(RelayConfiguration(malformedRate: 0, malformedBurst: 1))
        let (refused, _) = harness.open("s", query: ["key": "nope", "id": "a", "token": "t"])
        XCTAssertEqual(harness.receive(refused, "bad"), [])
        XCTAssertEqual(harness.receive(refused, "bad"), ["close s 1008"])
    }
}
