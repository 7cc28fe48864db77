import Foundation
import SwitchboardCore
import XCTest

/// ``JSONValue/parse(_:)`` against `JSONDecoder` (through `JSONValue`'s `Codable` conformance),
/// which it replaced on the call protocol's hot path: same answers on valid and invalid JSON.
final class JSONValueParsingTests: XCTestCase {
    private func reference(_ text: String) -> JSONValue? {
        try? JSONDecoder().decode(JSONValue.self, from: Data(text.utf8))
    }

    func test_validDocumentsParseAsJSONDecoderParsesThem() {
        let documents = [
            #"{"id":1,"type":"call.join","data":{"type":"default","id":"standup","create":true}}"#,
            #"  { "a" : [ 1 , -2.5 , 3e2 , 0.0 , -0 , 1E-3 , 12345678901234567890 ] , "b" : null , "c" : false }  "#,
            #"{"esc":"quote \" backslash \\ slash \/ \b\f\n\r\t \u00e9 \ud83d\ude00 é 😀"}"#,
            #"[]"#, #"{}"#, #"[[],[{}],[[[]]]]"#, #""text""#, "42", "true", "null", "-1.5e+10",
            #"{"nested":{"deeper":{"deepest":[1,{"x":"y"}]}},"empty":"","unicode":"\u0000"}"#,
        ]
        for document in documents {
            let parsed = JSONValue.parse(Array(document.utf8))
            XCTAssertNotNil(parsed, document)
            XCTAssertEqual(parsed, reference(document), document)
        }
    }

    func test_invalidDocumentsAreRefusedAsJSONDecoderRefusesThem() {
        let documents = [
            "", "   ", "{", "}", "[1 2]", "{'a':1}", #"{"a" 1}"#, "01", "1.", ".5", "+1", "-",
            "NaN", "Infinity", "tru", "nul", #""unterminated"#, "\"tab\there\"", #"{"a":1}{"b":2}"#, "1 2",
            #"{"a":"\x"}"#, #""\u12G4""#, "[" + String(repeating: "[", count: 600) + String(repeating: "]", count: 601),
        ]
        for document in documents {
            XCTAssertNil(JSONValue.parse(Array(document.utf8)), document)
            XCTAssertNil(reference(document), "the reference accepts \(document)")
        }
    }

    /// `JSONDecoder` takes a trailing comma; RFC 8259 does not, nor does the PeerJS path's scanner.
    func test_trailingCommasAreRefusedThoughJSONDecoderTakesThem() {
        for document in [#"{"a":1,}"#, "[1,]", #"{"id":1,"type":"ping",}"#] {
            XCTAssertNil(JSONValue.parse(Array(document.utf8)), document)
            XCTAssertNotNil(reference(document), document)
        }
    }

    func test_valuesComeOutAsTheyWereWritten() throws {
        let parsed = try XCTUnwrap(JSONValue.parse(Array(#"{"n":-12.5e1,"s":"a\"b","l":[true,null],"o":{}}"#.utf8)))
        XCTAssertEqual(parsed, .object(["n": .number(-125), "s": .string("a\"b"), "l": .array([.bool(true), .null]), "o": .object([:])]))
        XCTAssertEqual(parsed.text, #"{"l":[true,null],"n":-125,"o":{},"s":"a\"b"}"#, "and re-encode compactly, keys sorted")
    }

    /// An SFU room id is any integer below 2^53; one above 9e15 came out as `9.001279320490213e+15`,
    /// which Python reads as a float (found by the media e2e test, one room in ~1,000).
    func test_everyIntegerADoubleHoldsExactlyIsWrittenWithoutExponentOrFraction() {
        let cases: [(Double, String)] = [
            (9_001_279_320_490_213, "9001279320490213"), (9_007_199_254_740_991, "9007199254740991"),
            (9_007_199_254_740_992, "9007199254740992"), (-9_007_199_254_740_991, "-9007199254740991"),
            (0x1p62, "4611686018427387904"), (1.5, "1.5"), (-0.0, "0"), (1e300, "1e+300"),
        ]
        for (value, expected) in cases {
            XCTAssertEqual(JSONValue.number(value).text, expected, "\(value)")
        }
        XCTAssertEqual(JSONValue.parse(Array("9001279320490213".utf8))?.text, "9001279320490213")
    }

    func test_aNumberTooLargeForADoubleAndNestingPast256AreRefused() {
        XCTAssertNil(JSONValue.parse(Array("[1e999]".utf8)))
        let deep = String(repeating: "[", count: 257) + String(repeating: "]", count: 257)
        XCTAssertNil(JSONValue.parse(Array(deep.utf8)))
        let allowed = String(repeating: "[", count: 256) + String(repeating: "]", count: 256)
        XCTAssertNotNil(JSONValue.parse(Array(allowed.utf8)))
    }

    func test_aRepeatedKeyKeepsTheLastValueAndALoneSurrogateBecomesTheReplacementCharacter() {
        XCTAssertEqual(JSONValue.parse(Array(#"{"a":1,"a":2}"#.utf8)), .object(["a": .number(2)]))
        XCTAssertEqual(JSONValue.parse(Array(#""\ud800x""#.utf8)), .string("\u{FFFD}x"))
    }

    func test_int64ValueRefusesFractionsAndNumbersBeyondInt64InsteadOfTrapping() {
        XCTAssertEqual(JSONValue.number(42).int64Value, 42)
        XCTAssertEqual(JSONValue.number(-3).int64Value, -3)
        XCTAssertNil(JSONValue.number(1.5).int64Value)
        XCTAssertNil(JSONValue.number(1e300).int64Value)
        XCTAssertNil(JSONValue.number(-1e19).int64Value)
        XCTAssertNil(JSONValue.string("1").int64Value)
    }
}
