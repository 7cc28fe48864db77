import Foundation
import SwitchboardCore
import XCTest

final class TunnelWireTests: XCTestCase {
    // Serials above 2^53 once the thread byte is set: a JSON number read through a Double would change them.
    private let socket = ConnectionID(thread: 3, serial: 41)
    private let adminRequest = ConnectionID(thread: 0, serial: 7)
    private let clientRequest = ConnectionID(thread: 254, serial: 0x00FF_FFFF_FFFF_FFFF)

    /// The objects of the batch's `key` array ("e" events, "c" commands), as JSON.
    private func entries(_ text: String, _ key: String, file: StaticString = #filePath, line: UInt = #line) throws -> [[String: Any]] {
        let object = try XCTUnwrap(JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any], file: file, line: line)
        return try XCTUnwrap(object[key] as? [[String: Any]], "no \(key) in \(text)", file: file, line: line)
    }

    private func assertInvalid(_ body: String, file: StaticString = #filePath, line: UInt = #line) {
        do {
            let batch = try TunnelBatch.decode(body)
            XCTFail("decoded \(body) as \(batch)", file: file, line: line)
        } catch {
            XCTAssertEqual(error.code, .invalidRequest, file: file, line: line)
            XCTAssertTrue(error.message.hasPrefix("a tunnel batch that does not decode"), error.message, file: file, line: line)
        }
    }

    // MARK: Round trips

    func test_everyEventKindRoundTrips() throws {
        let events: [TransportEvent] = [
            .opened(
                socket,
                WebSocketUpgrade(
                    path: "/peerjs", query: ["id": "alice", "token": "a b&c=d", "key": "peerjs"],
                    headers: ["origin": "https://app.example", "user-agent": "Phone/1.0 (é)"], remoteAddress: "203.0.113.9:51234")),
            .opened(ConnectionID(thread: 3, serial: 42), WebSocketUpgrade(path: "/connect")),
            .message(socket, Array(#"{"type":"HEARTBEAT","payload":"é ✓ 🎉"}"#.utf8), isBinary: false),
            .message(socket, [0x00, 0x01, 0xFF, 0x80, 0x7F], isBinary: true),
            .message(socket, Array("binary but text".utf8), isBinary: true),
            .message(socket, [0x68, 0x69, 0xC3, 0x28, 0xFF, 0xFE], isBinary: false),
            .message(socket, [], isBinary: false),
            .closed(socket),
            .request(
                adminRequest,
                HTTPRequest(
                    method: "POST", path: "/admin/v1/rooms", query: ["dry": "1"],
                    headers: ["content-type": "application/json", "authorization": "Bearer x.y.z"],
                    body: Array(#"{"name":"room-1"}"#.utf8), remoteAddress: "[::1]:9000", listener: .admin)),
            .request(clientRequest, HTTPRequest(method: "PUT", path: "/peerjs/id", body: [0xFF, 0x00, 0xFE], listener: .client)),
        ]
        let batch = TunnelBatch(generation: 9_007_199_254_740_993, events: events)
        let decoded = try TunnelBatch.decode(batch.encoded())
        XCTAssertEqual(decoded, batch)
        XCTAssertEqual(decoded.generation, 9_007_199_254_740_993)
        XCTAssertEqual(decoded.events.count, 10)
        XCTAssertEqual(decoded.events[5], .message(socket, [0x68, 0x69, 0xC3, 0x28, 0xFF, 0xFE], isBinary: false))
        XCTAssertEqual(decoded.commands, [])
        guard case .request(let id, let request) = decoded.events[8] else { return XCTFail("\(decoded.events[8])") }
        XCTAssertEqual(id.rawValue, adminRequest.rawValue)
        XCTAssertEqual(request.listener, .admin)
        XCTAssertEqual(String(decoding: request.body, as: UTF8.self), #"{"name":"room-1"}"#)
        guard case .request(let other, let raw) = decoded.events[9] else { return XCTFail("\(decoded.events[9])") }
        XCTAssertEqual(other.rawValue, 0xFEFF_FFFF_FFFF_FFFF)
        XCTAssertEqual(raw.body, [0xFF, 0x00, 0xFE])
        XCTAssertEqual(raw.listener, .client)
    }

    func test_everyCommandKindRoundTrips() throws {
        let headers: [(name: String, value: String)] = [("Location", "/admin/v1/rooms/r"), ("X-Zeta", "2"), ("X-Alpha", "1"), ("X-Zeta", "3")]
        let commands: [OutboundCommand] = [
            .send(socket, Array(#"{"type":"OPEN","src":"é"}"#.utf8)),
            .send(socket, [0xC3, 0x28]),
            .sendBinary(socket, [0, 1, 2, 250, 255]),
            .close(socket, .policyViolation, reason: "too many bad frames"),
            .close(socket, CloseCode(rawValue: 4999), reason: ""),
            .respond(
                adminRequest,
                HTTPResponse(status: 201, contentType: "application/json; charset=utf-8", headers: headers, body: Array(#"{"ok":true}"#.utf8))),
            .respond(clientRequest, HTTPResponse(status: 204)),
            .respond(clientRequest, HTTPResponse(status: 200, contentType: "application/octet-stream", body: [0x89, 0x50, 0x00, 0xFF])),
        ]
        let batch = TunnelBatch(generation: 3, commands: commands)
        let decoded = try TunnelBatch.decode(batch.encoded())
        XCTAssertEqual(decoded, batch)
        XCTAssertEqual(decoded.events, [])
        XCTAssertEqual(decoded.commands[1], .send(socket, [0xC3, 0x28]))
        guard case .close(_, let code, let reason) = decoded.commands[3] else { return XCTFail("\(decoded.commands[3])") }
        XCTAssertEqual(code.rawValue, 1008)
        XCTAssertEqual(reason, "too many bad frames")
        guard case .respond(let id, let response) = decoded.commands[5] else { return XCTFail("\(decoded.commands[5])") }
        XCTAssertEqual(id, adminRequest)
        XCTAssertEqual(response.status, 201)
        XCTAssertEqual(response.contentType, "application/json; charset=utf-8")
        XCTAssertEqual(response.headers.map(\.name), ["Location", "X-Zeta", "X-Alpha", "X-Zeta"])
        XCTAssertEqual(response.headers.map(\.value), ["/admin/v1/rooms/r", "2", "1", "3"])
        XCTAssertEqual(response.body, Array(#"{"ok":true}"#.utf8))
        guard case .respond(_, let empty) = decoded.commands[6] else { return XCTFail("\(decoded.commands[6])") }
        XCTAssertNil(empty.contentType)
        XCTAssertEqual(empty.status, 204)
        XCTAssertEqual(empty.body, [])
    }

    func test_eventsAndCommandsTravelInOneBatch() throws {
        let batch = TunnelBatch(generation: -1, events: [.closed(socket)], commands: [.send(socket, Array("hi".utf8))])
        XCTAssertEqual(try TunnelBatch.decode(batch.encoded()), batch)
    }

    // MARK: The wire form

    func test_anEmptyBatchIsOnlyItsGeneration() {
        XCTAssertEqual(TunnelBatch(generation: 7).encoded(), #"{"g":7}"#)
        XCTAssertEqual(TunnelBatch.eventsKind, "tunnel.events")
        XCTAssertEqual(TunnelBatch.commandsKind, "tunnel.commands")
    }

    func test_aProbeTravelsAsItsClockReading() throws {
        let ping = TunnelBatch(generation: 3, ping: 1_234_567_890_123)
        let fields = try XCTUnwrap(try JSONSerialization.jsonObject(with: Data(ping.encoded().utf8)) as? [String: Int64])
        XCTAssertEqual(fields, ["g": 3, "pi": 1_234_567_890_123])
        XCTAssertEqual(try TunnelBatch.decode(ping.encoded()), ping)
        let pong = TunnelBatch(generation: 3, pong: 42)
        XCTAssertEqual(try TunnelBatch.decode(pong.encoded()), pong)
        XCTAssertNil(try TunnelBatch.decode(#"{"g":3}"#).ping)
    }

    func test_aUTF8TextFrameTravelsAsAJSONString() throws {
        let text = "hello peer 42"
        let encoded = TunnelBatch(generation: 1, events: [.message(socket, Array(text.utf8), isBinary: false)]).encoded()
        XCTAssertTrue(encoded.contains("\"\(text)\""), encoded)
        XCTAssertFalse(encoded.contains(Data(text.utf8).base64EncodedString()), encoded)
        let event = try XCTUnwrap(entries(encoded, "e").first)
        XCTAssertEqual(event["t"] as? String, text)
        XCTAssertNil(event["b"])
        XCTAssertNil(event["x"])
        XCTAssertEqual(event["k"] as? String, "message")
        XCTAssertEqual((event["c"] as? NSNumber)?.uint64Value, socket.rawValue)

        let frame = #"{"type":"OFFER","payload":{"sdp":"v=0\r\n"}}"#
        let command = try XCTUnwrap(entries(TunnelBatch(generation: 1, commands: [.send(socket, Array(frame.utf8))]).encoded(), "c").first)
        XCTAssertEqual(command["t"] as? String, frame)
        XCTAssertNil(command["b"])
    }

    func test_bytesThatAreNotUTF8TravelAsBase64() throws {
        let bytes: [UInt8] = [0x68, 0xC3, 0x28, 0xFF]
        let encoded = TunnelBatch(generation: 1, events: [.message(socket, bytes, isBinary: false)]).encoded()
        let event = try XCTUnwrap(entries(encoded, "e").first)
        XCTAssertEqual(event["b"] as? String, "aMMo/w==")
        XCTAssertNil(event["t"])
        XCTAssertNil(event["x"])
        XCTAssertEqual(try TunnelBatch.decode(encoded).events, [.message(socket, bytes, isBinary: false)])
    }

    func test_aBinaryFrameIsMarked() throws {
        let encoded = TunnelBatch(generation: 1, events: [.message(socket, [0x80], isBinary: true)]).encoded()
        let event = try XCTUnwrap(entries(encoded, "e").first)
        XCTAssertEqual(event["x"] as? Bool, true)
        XCTAssertEqual(event["b"] as? String, "gA==")
    }

    func test_aHandWrittenBatchDecodes() throws {
        let batch = try TunnelBatch.decode(
            #"{"g":12,"e":[{"c":5,"k":"message","t":"hi"},{"c":5,"k":"message","b":"AAE=","x":true},{"c":5,"k":"closed"}],"#
                + #""c":[{"c":6,"k":"respond","s":404,"h":[["A","1"],["B","2"]],"b":"/w=="},{"c":5,"k":"close","o":1012,"r":"bye"}]}"#)
        let five = ConnectionID(rawValue: 5)
        XCTAssertEqual(batch.generation, 12)
        XCTAssertEqual(batch.events, [.message(five, Array("hi".utf8), isBinary: false), .message(five, [0, 1], isBinary: true), .closed(five)])
        XCTAssertEqual(
            batch.commands,
            [.respond(ConnectionID(rawValue: 6), HTTPResponse(status: 404, headers: [("A", "1"), ("B", "2")], body: [0xFF])), .close(five, .serviceRestart, reason: "bye")])
        XCTAssertEqual(try TunnelBatch.decode(#"{"g":3}"#), TunnelBatch(generation: 3))
    }

    // MARK: Malformed batches

    func test_malformedJSONIsAnInvalidRequest() {
        assertInvalid("")
        assertInvalid("not json")
        assertInvalid(#"{"g":1,"e":["#)
        assertInvalid(#"{"e":[]}"#)
        assertInvalid(#"{"g":"one"}"#)
        assertInvalid(#"{"g":1,"e":[{"c":-1,"k":"closed"}]}"#)
        assertInvalid(#"{"g":1,"e":[{"k":"closed"}]}"#)
    }

    func test_anUnknownKindIsAnInvalidRequest() throws {
        XCTAssertEqual(try TunnelBatch.decode(#"{"g":1,"e":[{"c":1,"k":"closed"}]}"#).events, [.closed(ConnectionID(rawValue: 1))])
        assertInvalid(#"{"g":1,"e":[{"c":1,"k":"teleport"}]}"#)
        assertInvalid(#"{"g":1,"e":[{"c":1}]}"#)
        assertInvalid(#"{"g":1,"c":[{"c":1,"k":"shout","t":"x"}]}"#)
        // An event kind is not a command kind.
        assertInvalid(#"{"g":1,"c":[{"c":1,"k":"closed"}]}"#)
    }

    func test_badBase64IsAnInvalidRequest() throws {
        XCTAssertEqual(
            try TunnelBatch.decode(#"{"g":1,"e":[{"c":1,"k":"message","b":"aGk="}]}"#).events, [.message(ConnectionID(rawValue: 1), Array("hi".utf8), isBinary: false)])
        assertInvalid(#"{"g":1,"e":[{"c":1,"k":"message","b":"%%%"}]}"#)
        assertInvalid(#"{"g":1,"c":[{"c":1,"k":"sendBinary","b":"not base64!"}]}"#)
    }

    func test_aHeaderThatIsNotAPairIsAnInvalidRequest() throws {
        let valid = try TunnelBatch.decode(#"{"g":1,"c":[{"c":1,"k":"respond","s":200,"h":[["a","b"]],"t":""}]}"#)
        XCTAssertEqual(valid.commands, [.respond(ConnectionID(rawValue: 1), HTTPResponse(status: 200, headers: [("a", "b")]))])
        assertInvalid(#"{"g":1,"c":[{"c":1,"k":"respond","s":200,"h":[["a"]],"t":""}]}"#)
        assertInvalid(#"{"g":1,"c":[{"c":1,"k":"respond","s":200,"h":[["a","b","c"]],"t":""}]}"#)
        assertInvalid(#"{"g":1,"c":[{"c":1,"k":"respond","s":200,"h":[["a","b"],[]],"t":""}]}"#)
    }

    func test_anUnknownListenerIsAnInvalidRequest() throws {
        let body = #"{"g":1,"e":[{"c":1,"k":"request","m":"GET","p":"/","q":{},"h":{},"a":"","l":"LISTENER","t":""}]}"#
        XCTAssertEqual(
            try TunnelBatch.decode(body.replacingOccurrences(of: "LISTENER", with: "admin")).events,
            [.request(ConnectionID(rawValue: 1), HTTPRequest(method: "GET", path: "/", listener: .admin))])
        assertInvalid(body.replacingOccurrences(of: "LISTENER", with: "backstage"))
    }
}
