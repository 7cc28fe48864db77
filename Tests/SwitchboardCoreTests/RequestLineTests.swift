import SwitchboardCore
import XCTest

final class RequestLineTests: XCTestCase {
    private func read(_ text: String) -> RequestLine.Reading {
        RequestLine.read(Array(text.utf8))
    }

    func test_aWholeLineGivesTheMethodAndTheDecodedPathWithoutTheQuery() {
        XCTAssertEqual(read("TRACE /v1/stats HTTP/1.1\r\nHost: x\r\n\r\n"), .line(RequestLine(method: "TRACE", path: "/v1/stats")))
        XCTAssertEqual(read("QUERY /v1/%73tats?limit=5 HTTP/1.0\n"), .line(RequestLine(method: "QUERY", path: "/v1/stats")))
        XCTAssertEqual(read("CONNECT example.com:443 HTTP/1.1\r\n"), .line(RequestLine(method: "CONNECT", path: "example.com:443")))
        XCTAssertEqual(read("M-SEARCH * HTTP/1.1\r\n"), .line(RequestLine(method: "M-SEARCH", path: "*")))
    }

    func test_aLineWithoutItsEndIsIncompleteUntilItIsTooLong() {
        XCTAssertEqual(read(""), .incomplete)
        XCTAssertEqual(read("TRACE /v1/st"), .incomplete)
        XCTAssertEqual(read("TRACE /v1/stats HTTP/1.1\r"), .incomplete)
        let long = "FOO /" + String(repeating: "a", count: RequestLine.maxLength)
        XCTAssertEqual(read(String(long.prefix(RequestLine.maxLength - 1))), .incomplete)
        guard case .malformed(let reason) = read(String(long.prefix(RequestLine.maxLength))) else { return XCTFail("a full buffer without a line end") }
        XCTAssertTrue(reason.contains("longer than \(RequestLine.maxLength)"), reason)
    }

    func test_bytesThatCannotBeInARequestLineAreMalformedAtOnce() {
        for bytes: [UInt8] in [[0x16, 0x03, 0x01, 0x02, 0x00], Array("FOO /\u{00e9}".utf8), Array("FOO /a\tb HTTP/1.1\r\n".utf8), [0x46, 0x00]] {
            guard case .malformed = RequestLine.read(bytes) else { return XCTFail("\(bytes) was not refused") }
        }
    }

    func test_aLineNotShapedMethodTargetVersionIsMalformed() {
        for text in [
            " /v1/stats HTTP/1.1\r\n", "FOO  /v1/stats HTTP/1.1\r\n", "FOO /v1/stats\r\n", "FOO /v1/stats HTTP/1.1 x\r\n",
            "Host: x\r\n", "FO(O /v1/stats HTTP/1.1\r\n", "FOO /v1/stats HTCPCP/1.0\r\n", "\r\n",
        ] {
            guard case .malformed = read(text) else { return XCTFail("\(text.debugDescription) was not refused") }
        }
    }

    func test_aBrokenOrControlPercentEscapeIsMalformed() {
        for target in ["/a%", "/a%2", "/a%zz", "/a%00", "/a%0a", "/a%7F"] {
            guard case .malformed = read("FOO \(target) HTTP/1.1\r\n") else { return XCTFail("\(target) was not refused") }
        }
        XCTAssertEqual(read("FOO /a%20b%2F HTTP/1.1\r\n"), .line(RequestLine(method: "FOO", path: "/a b/")))
    }
}
