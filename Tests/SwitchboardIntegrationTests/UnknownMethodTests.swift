import Foundation
import SwitchboardTesting
import SwitchboardTransport
import XCTest

/// Methods libwebsockets does not parse (TRACE, QUERY, anything, and CONNECT, which it turns
/// raw): the daemon reads their request line itself and answers JSON, 405 with `Allow` on a
/// path that exists and 404 elsewhere, never lws's HTML 403.
final class UnknownMethodTests: XCTestCase {
    private let token = "t0ken-for-tests"

    /// Sends `chunks` (pausing between them, so each arrives in a read of its own) and reads
    /// until the daemon ends the stream.
    private func exchange(port: Int, _ chunks: [[UInt8]]) throws -> (head: String, body: [String: Any]) {
        let socket = try BlockingSocket(host: "127.0.0.1", port: port)
        defer { socket.close() }
        for (index, chunk) in chunks.enumerated() {
            if index > 0 { Thread.sleep(forTimeInterval: 0.2) }
            try socket.send(chunk)
        }
        var received: [UInt8] = []
        let deadline = ContinuousClock.now + .seconds(5)
        while true {
            let chunk = try socket.receive(timeout: deadline - ContinuousClock.now)
            if chunk.isEmpty { break }
            received += chunk
        }
        let text = String(decoding: received, as: UTF8.self)
        let parts = text.components(separatedBy: "\r\n\r\n")
        let body = try? JSONSerialization.jsonObject(with: Data((parts.dropFirst().first ?? "").utf8))
        return (parts[0], body as? [String: Any] ?? [:])
    }

    private func code(_ body: [String: Any]) -> String? { (body["error"] as? [String: Any])?["code"] as? String }

    func test_anUnknownMethodOnAnAdminRouteIsAJSON405WithAllowAndOnNoRouteA404() throws {
        let daemon = try TestDaemon(["admin.token": .string(token)])
        for method in ["TRACE", "QUERY", "FOO", "CONNECT", "trace"] {
            let response = try daemon.admin(method, "/v1/stats")  // no token: routing comes first
            XCTAssertEqual(response.status, 405, method)
            XCTAssertEqual(response.headers["allow"], "GET, HEAD", method)
            XCTAssertEqual(response.headers["connection"], "close", method)
            XCTAssertEqual(response.headers["content-type"], "application/json; charset=utf-8", method)
            XCTAssertEqual(code(response.json as? [String: Any] ?? [:]), "method_not_allowed", method)
            let missing = try daemon.admin(method, "/v1/nope?x=1", token: token)
            XCTAssertEqual(missing.status, 404, method)
            XCTAssertEqual(code(missing.json as? [String: Any] ?? [:]), "not_found", method)
        }
        XCTAssertEqual(try daemon.admin("TRACE", "/v1/%73fus").headers["allow"], "GET, POST, HEAD")
        XCTAssertEqual(try daemon.admin("GET", "/v1/stats", token: token).status, 200)  // still serving
    }

    func test_anUnknownMethodOnThePeerJSRoutesIsA405WithAllowAndElsewhereA404() throws {
        let daemon = try TestDaemon(["peerjs.path": .string("/myapp/")])
        let response = try daemon.http("TRACE", "/myapp/peerjs/id")
        XCTAssertEqual(response.status, 405)
        XCTAssertEqual(response.headers["allow"], "GET, HEAD, OPTIONS")
        XCTAssertEqual(code(response.json as? [String: Any] ?? [:]), "method_not_allowed")
        XCTAssertEqual(try daemon.http("QUERY", "/elsewhere").status, 404)
        XCTAssertEqual(try daemon.http("GET", "/myapp/peerjs/id").status, 200)
    }

    func test_theAnswerIsWholeHTTP11AndTheStreamEndsWhileTheRestOfTheRequestIsStillComing() throws {
        let daemon = try TestDaemon()
        // Headers not finished: the answer comes on the request line alone, then the end of the stream.
        let (head, body) = try exchange(port: daemon.adminPort, [Array("TRACE /v1/stats HTTP/1.1\r\nHost: 127.0.0.1\r\n".utf8)])
        XCTAssertTrue(head.hasPrefix("HTTP/1.1 405 Method Not Allowed\r\n"), head)
        XCTAssertTrue(head.contains("\r\nallow: GET, HEAD\r\n"), head)
        XCTAssertTrue(head.contains("\r\nconnection: close"), head)
        XCTAssertEqual(code(body), "method_not_allowed")
    }

    func test_aRequestLineThatCannotBeReadIsA400() throws {
        let daemon = try TestDaemon()
        let port = daemon.adminPort
        // Not text (a TLS hello on the plain port): refused at once, no line end awaited.
        let hello = try exchange(port: port, [[0x16, 0x03, 0x01, 0x00, 0xA5, 0x01, 0x00]])
        XCTAssertTrue(hello.head.hasPrefix("HTTP/1.1 400 "), hello.head)
        XCTAssertEqual(code(hello.body), "invalid_request")
        // Longer than RequestLine.maxLength without a line end.
        let long = try exchange(port: port, [Array(("FOO /" + String(repeating: "a", count: 9000)).utf8)])
        XCTAssertTrue(long.head.hasPrefix("HTTP/1.1 400 "), long.head)
        // A method cut where lws stopped reading it (it passes only its last read): the rest,
        // `GET`, is not taken for the method.
        let cut = try exchange(port: port, [Array("X".utf8), Array("GET /healthz HTTP/1.1\r\n\r\n".utf8)])
        XCTAssertTrue(cut.head.hasPrefix("HTTP/1.1 400 "), cut.head)
        XCTAssertEqual(code(cut.body), "invalid_request")
        XCTAssertTrue(((cut.body["error"] as? [String: Any])?["message"] as? String ?? "").contains("cut inside its method"), "\(cut.body)")
        XCTAssertEqual(try daemon.admin("GET", "/healthz").status, 200)
    }
}
