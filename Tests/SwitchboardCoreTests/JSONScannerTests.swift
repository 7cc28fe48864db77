@testable import SwitchboardCore
import XCTest

final class JSONScannerTests: XCTestCase {
    private func bytes(_ text: String) -> [UInt8] { Array(text.utf8) }

    private func failure(validating text: String) -> JSONScanner.Failure? {
        do {
            try JSONScanner.validate(bytes(text))
            return nil
        } catch {
            return error
        }
    }

    private func failure(ofMembers text: String) -> JSONScanner.Failure? {
        do {
            _ = try JSONScanner.topLevelMembers(of: bytes(text))
            return nil
        } catch {
            return error
        }
    }

    // MARK: Valid grammar

    func test_validDocumentsAreAccepted() {
        let valid = [
            // numbers
            "0", "-0", "1", "-1", "10", "1.5", "-1.5e10", "1E+2", "1e-2", "0.0", "0e0", "1.0E-0",
            "123456789012345678901234567890", "-0.000001",
            // strings and escapes
            #""""#, #""a""#, #""\"\\\/\b\f\n\r\t""#, #""\u00e9""#, #""\uD83D\uDE00""#, #""\uDEAD""#,
            #""\uABCD\uabcd""#, "\"é😀\"", #""\u0000""#, "\"\u{7F}\"",
            // literals
            "true", "false", "null",
            // containers and whitespace
            "[]", "[ ]", "{}", "{ }", #"[1,"a",null,true,false,{},[]]"#, #"{"a":{"b":[1,{"c":null}]}}"#,
            " \t\r\n{\"a\" : 1 , \"b\" :[ ] }\n ", #"{"":1}"#, #"{"a":1,"a":2}"#, "[\n1\n,\n2\n]",
        ]
        for text in valid {
            XCTAssertNil(failure(validating: text), text)
        }
    }

    // MARK: Invalid grammar

    func test_invalidDocumentsAreRefusedAtTheOffendingByte() {
        let invalid: [(String, Int)] = [
            // numbers
            ("01", 1), ("-01", 2), ("1.", 2), (".5", 0), ("+1", 0), ("-", 1), ("1e", 2), ("1e+", 3),
            ("0x10", 1), ("1.e5", 2), ("-a", 1), ("1ee2", 2), ("--1", 1),
            // strings
            (#""\x""#, 2), (#""\u12""#, 2), (#""\u12G4""#, 5), (#""abc"#, 4), ("\"a\tb\"", 2),
            ("\"a\nb\"", 2), (#""\u00e9"#, 7), (#""\"#, 2), (#""\U00e9""#, 2),
            // structure
            ("[1,]", 3), (#"{"a":1,}"#, 7), (#"{"a" 1}"#, 5), ("{a:1}", 1), ("[1 2]", 3), ("[", 1), ("{", 1),
            (#"{"a":}"#, 5), ("[,1]", 1), ("[1]]", 3), (#"{"a":1"#, 6), ("{1:2}", 1),
            // literals
            ("tru", 0), ("nul", 0), ("True", 0), ("NaN", 0), ("Infinity", 0), ("-Infinity", 1), ("nulll", 4),
            ("'a'", 0), ("undefined", 0),
            // whitespace and trailing garbage
            ("\u{0C}1", 0), ("{} {}", 3), ("{}x", 2), ("1 2", 2), ("\u{0}", 0), ("[]\u{0}", 2),
        ]
        for (text, offset) in invalid {
            XCTAssertEqual(failure(validating: text), .syntax(offset: offset), text.debugDescription)
        }
    }

    func test_anEmptyOrBlankDocumentIsEmpty() {
        XCTAssertEqual(failure(validating: ""), .empty)
        XCTAssertEqual(failure(validating: " \n\r\t"), .empty)
        XCTAssertEqual(failure(ofMembers: ""), .empty)
        XCTAssertEqual(failure(ofMembers: "  "), .empty)
    }

    // MARK: Depth

    private func nestedArrays(_ depth: Int, inner: String = "") -> String {
        String(repeating: "[", count: depth) + inner + String(repeating: "]", count: depth)
    }

    func test_nestingUpToTheMaximumDepthIsAccepted() {
        XCTAssertEqual(JSONScanner.maximumDepth, 256)
        XCTAssertNil(failure(validating: nestedArrays(256)))
        XCTAssertNil(failure(validating: nestedArrays(256, inner: "1")))
        XCTAssertNil(failure(validating: nestedArrays(256, inner: #""s""#)))
    }

    func test_nestingBeyondTheMaximumDepthIsTooDeep() {
        XCTAssertEqual(failure(validating: nestedArrays(257)), .tooDeep)
        XCTAssertEqual(failure(validating: nestedArrays(257, inner: "1")), .tooDeep)
        XCTAssertEqual(failure(validating: nestedArrays(100_000)), .tooDeep)
    }

    func test_objectNestingCountsTowardsTheMaximumDepth() {
        let open256 = String(repeating: #"{"a":"#, count: 255) + "{}" + String(repeating: "}", count: 255)
        XCTAssertNil(failure(validating: open256))
        XCTAssertNil(failure(ofMembers: open256))
        let open257 = String(repeating: #"{"a":"#, count: 256) + "{}" + String(repeating: "}", count: 256)
        XCTAssertEqual(failure(validating: open257), .tooDeep)
        XCTAssertEqual(failure(ofMembers: open257), .tooDeep)
    }

    func test_theTopLevelObjectCountsAsOneLevelOfNesting() {
        XCTAssertNil(failure(ofMembers: #"{"a":"# + nestedArrays(255) + "}"))
        XCTAssertNil(failure(ofMembers: #"{"a":"# + nestedArrays(255, inner: "1") + "}"))
        XCTAssertEqual(failure(ofMembers: #"{"a":"# + nestedArrays(256) + "}"), .tooDeep)
        XCTAssertEqual(failure(ofMembers: #"{"a":"# + nestedArrays(256, inner: "1") + "}"), .tooDeep)
    }

    // MARK: Top-level members

    func test_topLevelMembersAreReturnedInOrderWithTheirRawValueRanges() throws {
        let text = #" { "type" : "OFFER" , "dst":"b", "payload" : {"x": [1, 2]} ,"n":-1.5e3} "#
        let data = bytes(text)
        let members = try JSONScanner.topLevelMembers(of: data)
        XCTAssertEqual(members.map(\.key), ["type", "dst", "payload", "n"])
        XCTAssertEqual(members.map { String(decoding: data[$0.value], as: UTF8.self) }, [#""OFFER""#, #""b""#, #"{"x": [1, 2]}"#, "-1.5e3"])
        XCTAssertEqual(members[0].value, 12..<19)
    }

    func test_duplicateMembersAreKept() throws {
        let members = try JSONScanner.topLevelMembers(of: bytes(#"{"a":1,"a":2}"#))
        XCTAssertEqual(members.map(\.key), ["a", "a"])
        XCTAssertEqual(members.map(\.value), [5..<6, 11..<12])
    }

    func test_escapedMemberKeysAreDecoded() throws {
        let members = try JSONScanner.topLevelMembers(of: bytes(#"{"\u0074ype":1,"a\n\"":2,"\uD83D\uDE00":3}"#))
        XCTAssertEqual(members.map(\.key), ["type", "a\n\"", "😀"])
    }

    func test_anEmptyObjectHasNoMembers() throws {
        XCTAssertEqual(try JSONScanner.topLevelMembers(of: bytes(" {} ")).count, 0)
    }

    func test_aValidValueThatIsNotAnObjectIsNotAnObject() {
        for text in ["42", "[1]", "[]", "null", "true", #""s""#, " 1.5 "] {
            XCTAssertEqual(failure(ofMembers: text), .notAnObject, text)
        }
    }

    func test_anInvalidNonObjectIsASyntaxErrorNotNotAnObject() {
        XCTAssertEqual(failure(ofMembers: "42 x"), .syntax(offset: 3))
        XCTAssertEqual(failure(ofMembers: "["), .syntax(offset: 1))
        XCTAssertEqual(failure(ofMembers: "hello"), .syntax(offset: 0))
    }

    func test_trailingBytesAfterTheObjectAreASyntaxError() {
        XCTAssertEqual(failure(ofMembers: "{}x"), .syntax(offset: 2))
        XCTAssertEqual(failure(ofMembers: #"{"a":1} {"b":2}"#), .syntax(offset: 8))
        XCTAssertEqual(failure(ofMembers: #"{"a":1}}"#), .syntax(offset: 7))
    }

    func test_malformedObjectsAreASyntaxErrorAtTheOffendingByte() {
        XCTAssertEqual(failure(ofMembers: #"{"a":1,}"#), .syntax(offset: 7))
        XCTAssertEqual(failure(ofMembers: #"{"a" 1}"#), .syntax(offset: 5))
        XCTAssertEqual(failure(ofMembers: "{a:1}"), .syntax(offset: 1))
        XCTAssertEqual(failure(ofMembers: #"{"a":1"#), .syntax(offset: 6))
        XCTAssertEqual(failure(ofMembers: #"{"a":1 "b":2}"#), .syntax(offset: 7))
        XCTAssertEqual(failure(ofMembers: "{"), .syntax(offset: 1))
        XCTAssertEqual(failure(ofMembers: #"{"a":[1,]}"#), .syntax(offset: 8))
    }

    // MARK: decodeString

    private func decode(_ literal: String) -> String? {
        let data = bytes(literal)
        return JSONScanner.decodeString(data, 0..<data.count)
    }

    func test_decodeStringReturnsAPlainStringUnchanged() {
        XCTAssertEqual(decode(#""abc""#), "abc")
        XCTAssertEqual(decode(#""""#), "")
        XCTAssertEqual(decode("\"é😀\""), "é😀")
    }

    func test_decodeStringDecodesEverySimpleEscape() {
        XCTAssertEqual(decode(#""a\"b\\c\/d\be\ff\ng\rh\ti""#), "a\"b\\c/d\u{8}e\u{C}f\ng\rh\ti")
    }

    func test_decodeStringDecodesUnicodeEscapes() {
        XCTAssertEqual(decode(#""\u00e9\u20AC\u0041""#), "é€A")
        XCTAssertEqual(decode(#""\u0000""#), "\u{0}")
    }

    func test_decodeStringJoinsSurrogatePairs() {
        XCTAssertEqual(decode(#""\uD83D\uDE00""#), "😀")
        XCTAssertEqual(decode(#""x\ud83d\ude00y""#), "x😀y")
    }

    func test_decodeStringReplacesLoneSurrogates() {
        XCTAssertEqual(decode(#""\uD83D""#), "\u{FFFD}")
        XCTAssertEqual(decode(#""\uDE00""#), "\u{FFFD}")
        XCTAssertEqual(decode(#""\uD83Dx""#), "\u{FFFD}x")
        XCTAssertEqual(decode(#""\uD83D\n""#), "\u{FFFD}\n")
        XCTAssertEqual(decode(#""\uD83D\u0041""#), "\u{FFFD}A")
        XCTAssertEqual(decode(#""\uD83D\uD83D\uDE00""#), "\u{FFFD}😀")
        XCTAssertEqual(decode(#""\uDE00\uD83D""#), "\u{FFFD}\u{FFFD}")
    }

    func test_decodeStringReadsOnlyTheGivenRange() {
        let data = bytes(#"{"k":"v\u0021","z":"w"}"#)
        XCTAssertEqual(JSONScanner.decodeString(data, 5..<14), "v!")
        XCTAssertEqual(JSONScanner.decodeString(data, 19..<22), "w")
    }

    func test_decodeStringOfANonStringIsNil() {
        XCTAssertNil(decode("42"))
        XCTAssertNil(decode("null"))
        XCTAssertNil(decode("[\"a\"]"))
        let data = bytes(#""""#)
        XCTAssertNil(JSONScanner.decodeString(data, 0..<1))
    }
}

/// The word-at-a-time scan for the end of a plain run inside a string must find exactly what a
/// byte-by-byte scan finds.
final class JSONScannerPlainRunTests: XCTestCase {
    private func naive(_ bytes: [UInt8], from start: Int) -> Int {
        var index = start
        while index < bytes.count, bytes[index] >= 0x20, bytes[index] != 0x22, bytes[index] != 0x5C { index += 1 }
        return index
    }

    func test_theScanStopsWhereAByteByByteScanStops() {
        var generator = SplitMix64(seed: 7)
        let special: [UInt8] = [0x00, 0x01, 0x1F, 0x20, 0x21, 0x22, 0x23, 0x5B, 0x5C, 0x5D, 0x7F, 0x80, 0xA2, 0xDC, 0xFF]
        for round in 0..<4000 {
            let count = Int(generator.next() % 40)
            var bytes = (0..<count).map { _ in UInt8(ascii: "a") + UInt8(generator.next() % 26) }
            // A few special bytes at random places (or none).
            for _ in 0..<Int(generator.next() % 3) where count > 0 {
                bytes[Int(generator.next() % UInt64(count))] = special[Int(generator.next() % UInt64(special.count))]
            }
            if round % 5 == 0 { bytes = (0..<count).map { _ in UInt8(truncatingIfNeeded: generator.next()) } }
            for start in 0...count {
                XCTAssertEqual(JSONScanner.endOfPlainRun(bytes, from: start), naive(bytes, from: start), "\(bytes) from \(start)")
            }
        }
    }

    func test_stringsWithEscapesAndControlsAtEveryOffsetAreJudgedAsBefore() throws {
        for offset in 0..<20 {
            let padding = String(repeating: "x", count: offset)
            XCTAssertNoThrow(try JSONScanner.validate(Array(#""\#(padding)\"\#(padding)\\\u00e9ü""#.utf8)))
            XCTAssertThrowsError(try JSONScanner.validate(Array("\"\(padding)\u{1}\(padding)\"".utf8)))
            XCTAssertThrowsError(try JSONScanner.validate(Array("\"\(padding)".utf8)), "unterminated")
            XCTAssertThrowsError(try JSONScanner.validate(Array("\"\(padding)\\q\"".utf8)), "bad escape")
        }
    }
}
