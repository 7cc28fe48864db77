import SwitchboardCore
import XCTest

final class PeerJSWireFormatTests: XCTestCase {
    private func text(_ bytes: [UInt8]) -> String { String(decoding: bytes, as: UTF8.self) }

    // MARK: Outbound

    func test_openIsExactlyTypeOpen() {
        XCTAssertEqual(PeerJSOutbound.open, Array(#"{"type":"OPEN"}"#.utf8))
    }

    func test_idTakenIsTheExactPeerJSFrame() {
        XCTAssertEqual(text(PeerJSOutbound.idTaken), #"{"type":"ID-TAKEN","payload":{"msg":"ID is taken"}}"#)
    }

    func test_theHandshakeErrorTextsAreWordedAsPeerJSWordsThem() {
        XCTAssertEqual(PeerJSOutbound.ErrorText.missingParameters, "No id, token, or key supplied to websocket server")
        XCTAssertEqual(PeerJSOutbound.ErrorText.invalidKey, "Invalid key provided")
        XCTAssertEqual(PeerJSOutbound.ErrorText.concurrentLimit, "Server has reached its concurrent user limit")
    }

    func test_anErrorFrameQuotesItsMessage() {
        XCTAssertEqual(text(PeerJSOutbound.error(#"bad "x""#)), #"{"type":"ERROR","payload":{"msg":"bad \"x\""}}"#)
    }

    func test_expireNamesTheOfflinePeerAsSrcAndTheSenderAsDstWithoutPayload() {
        XCTAssertEqual(text(PeerJSOutbound.expire(offlinePeer: "x", sender: PeerID("a")!)), #"{"type":"EXPIRE","src":"x","dst":"a"}"#)
    }

    func test_leaveNamesTheGonePeerAsSrcAndTheRecipientAsDst() {
        XCTAssertEqual(text(PeerJSOutbound.leave(peer: PeerID("b")!, recipient: PeerID("a")!)), #"{"type":"LEAVE","src":"b","dst":"a"}"#)
    }

    func test_controlFramesEscapeIds() {
        XCTAssertEqual(text(PeerJSOutbound.expire(offlinePeer: "x\"", sender: PeerID("a\\")!)), #"{"type":"EXPIRE","src":"x\"","dst":"a\\"}"#)
    }

    // MARK: Inbound

    private func message(_ text: String, isBinary: Bool = false, file: StaticString = #filePath, line: UInt = #line) -> PeerJSMessage? {
        guard case .message(let message) = PeerJSInbound.parse(Array(text.utf8), isBinary: isBinary) else {
            XCTFail("not a message: \(text)", file: file, line: line)
            return nil
        }
        return message
    }

    private func malformedFailure(_ bytes: [UInt8], isBinary: Bool = false) -> JSONScanner.Failure? {
        guard case .malformed(let failure) = PeerJSInbound.parse(bytes, isBinary: isBinary) else { return nil }
        return failure
    }

    private func isIgnored(_ text: String) -> Bool {
        guard case .ignored = PeerJSInbound.parse(Array(text.utf8), isBinary: false) else { return false }
        return true
    }

    func test_parseReadsTypeDstAndThePayloadBytes() throws {
        let parsed = try XCTUnwrap(message(#"{"type":"OFFER","src":"s","dst":"b","payload": {"k" : [1]} }"#))
        XCTAssertEqual(parsed.type, .offer)
        XCTAssertEqual(parsed.destination, "b")
        XCTAssertEqual(parsed.payloadBytes.map { Array($0) }, Array(#"{"k" : [1]}"#.utf8))
    }

    func test_parseLeavesAbsentDstAndPayloadNil() throws {
        let parsed = try XCTUnwrap(message(#"{"type":"LEAVE"}"#))
        XCTAssertEqual(parsed.type, .leave)
        XCTAssertNil(parsed.destination)
        XCTAssertNil(parsed.payload)
    }

    func test_parseTreatsANonStringDstAsAbsent() throws {
        XCTAssertNil(try XCTUnwrap(message(#"{"type":"OFFER","dst":7}"#)).destination)
        XCTAssertNil(try XCTUnwrap(message(#"{"type":"OFFER","dst":null}"#)).destination)
    }

    func test_parseKeepsANullPayloadAsTheBytesNull() throws {
        let parsed = try XCTUnwrap(message(#"{"type":"OFFER","payload":null}"#))
        XCTAssertEqual(parsed.payloadBytes.map { Array($0) }, Array("null".utf8))
    }

    func test_parseRecognisesEveryHandledTypeCaseSensitively() {
        for type in PeerJSMessageType.allCases {
            XCTAssertEqual(message(#"{"type":""# + type.rawValue + #""}"#)?.type, type)
            XCTAssertTrue(isIgnored(#"{"type":""# + type.rawValue.lowercased() + #""}"#), type.rawValue)
        }
    }

    func test_parseIgnoresObjectsWithoutAHandledStringType() {
        XCTAssertTrue(isIgnored("{}"))
        XCTAssertTrue(isIgnored(#"{"type":1}"#))
        XCTAssertTrue(isIgnored(#"{"type":"OPEN"}"#))
        XCTAssertTrue(isIgnored(#"{"Type":"OFFER"}"#))
    }

    func test_parseReportsWhyAFrameIsMalformed() {
        XCTAssertEqual(malformedFailure([]), .empty)
        XCTAssertEqual(malformedFailure(Array("1".utf8)), .notAnObject)
        XCTAssertEqual(malformedFailure(Array("null".utf8)), .notAnObject)
        XCTAssertEqual(malformedFailure(Array("{".utf8)), .syntax(offset: 1))
        XCTAssertEqual(malformedFailure(Array((String(repeating: "[", count: 300) + String(repeating: "]", count: 300)).utf8)), .tooDeep)
    }

    func test_parseRefusesABinaryFrameThatIsNotUTF8() {
        XCTAssertEqual(malformedFailure([0x7B, 0xFF, 0x7D], isBinary: true), .syntax(offset: 0))
        XCTAssertEqual(malformedFailure([0xC0, 0x80], isBinary: true), .syntax(offset: 0))
    }

    func test_theQueuedTypesAreOfferAnswerAndCandidate() {
        XCTAssertEqual(PeerJSMessageType.allCases.filter(\.isQueuedWhenOffline), [.offer, .answer, .candidate])
    }

    func test_relayRebuildsTheFrameFromAParsedMessage() throws {
        let parsed = try XCTUnwrap(message(#"{"payload":[ 1 ],"dst":"b","type":"ANSWER","src":"x"}"#))
        XCTAssertEqual(text(PeerJSOutbound.relay(parsed, from: PeerID("a")!, to: "b")), #"{"type":"ANSWER","src":"a","dst":"b","payload":[ 1 ]}"#)
    }
}
