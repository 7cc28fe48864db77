import SwitchboardCore
import XCTest

final class JSONStringUnescaperTests: XCTestCase {
    private func quoted(_ string: String) -> String {
        var out: [UInt8] = []
        JSONStringUnescaper.appendQuoted(string, to: &out)
        return String(decoding: out, as: UTF8.self)
    }

    func test_appendQuotedWrapsPlainTextInQuotes() {
        XCTAssertEqual(quoted("plain"), #""plain""#)
        XCTAssertEqual(quoted(""), #""""#)
    }

    func test_appendQuotedEscapesQuotesAndBackslashes() {
        XCTAssertEqual(quoted(#"a"b\c"#), #""a\"b\\c""#)
    }

    func test_appendQuotedEscapesControlCharacters() {
        XCTAssertEqual(quoted("\n\r\t"), #""\n\r\t""#)
        XCTAssertEqual(quoted("\u{0}\u{1F}\u{8}\u{C}"), #""\u0000\u001f\u0008\u000c""#)
    }

    func test_appendQuotedCopiesNonASCIIAndSlashUnchanged() {
        XCTAssertEqual(quoted("é😀/\u{7F}"), "\"é😀/\u{7F}\"")
    }

    func test_appendQuotedAppendsToExistingBytes() {
        var out: [UInt8] = Array("x=".utf8)
        JSONStringUnescaper.appendQuoted("y", to: &out)
        XCTAssertEqual(out, Array(#"x="y""#.utf8))
    }

    func test_quotedStringsDecodeBackToTheOriginal() throws {
        for original in ["", "a\"b\\c", "\n\r\t\u{0}\u{1}\u{1F}", "é😀", "mixed \u{8} \"x\" /"] {
            var out: [UInt8] = []
            JSONStringUnescaper.appendQuoted(original, to: &out)
            XCTAssertNoThrow(try JSONScanner.validate(out), original.debugDescription)
            XCTAssertEqual(JSONScanner.decodeString(out, 0..<out.count), original, original.debugDescription)
        }
    }

    func test_unescapeDecodesABodyWithoutQuotes() {
        XCTAssertEqual(JSONStringUnescaper.unescape(ArraySlice(#"a\u0062\"c"#.utf8)), "ab\"c")
    }

    func test_unescapeHonoursTheSliceBounds() {
        let data = Array(#"xx\n\u0041yy"#.utf8)
        XCTAssertEqual(JSONStringUnescaper.unescape(data[2..<10]), "\nA")
    }
}
