import SwitchboardCore
import XCTest

final class HTTPResponseWireTests: XCTestCase {
    func test_aClosingResponseIsHTTP11WithLengthHeadersAndBody() {
        var response = SwitchboardError(.invalidRequest, "only WebSocket version 13 is served").httpResponse
        response.status = 426
        response.headers.append(("Sec-WebSocket-Version", "13"))
        let text = String(decoding: response.closingHTTP11Bytes(), as: UTF8.self)
        let (head, body) = (text.components(separatedBy: "\r\n\r\n")[0], text.components(separatedBy: "\r\n\r\n")[1])
        let lines = head.components(separatedBy: "\r\n")
        XCTAssertEqual(lines.first, "HTTP/1.1 426 Upgrade Required")
        XCTAssertTrue(lines.contains("content-type: application/json; charset=utf-8"), head)
        XCTAssertTrue(lines.contains("content-length: \(response.body.count)"), head)
        XCTAssertTrue(lines.contains("sec-websocket-version: 13"), head)
        XCTAssertEqual(lines.last, "connection: close")
        XCTAssertEqual(Array(body.utf8), response.body)
    }

    func test_reasonPhrases() {
        XCTAssertEqual(HTTPResponse.reasonPhrase(404), "Not Found")
        XCTAssertEqual(HTTPResponse.reasonPhrase(405), "Method Not Allowed")
        XCTAssertEqual(HTTPResponse.reasonPhrase(499), "Error")
    }
}
