import Foundation
import SwitchboardCore
import XCTest

/// The tunnel's hand-written JSON against the `Codable` conformances it replaced on the bus: a
/// daemon of either build reads what the other writes. Batches come from a seeded generator
/// (every event and command kind, text that needs escaping, bytes that are not UTF-8).
final class TunnelJSONTests: XCTestCase {
    private var random = SplitMix64(seed: 0x5EED_7011)

    private func pick<T>(_ values: [T]) -> T { values[Int(random.next() % UInt64(values.count))] }

    private func text() -> String {
        let pieces = ["a", "é", "🎉", "\"", "\\", "\n", "\u{1}", "/", "\u{7F}", "{\"type\":\"OFFER\"}", " ", "\u{2028}", "ü"]
        return (0..<Int(random.next() % 12)).map { _ in pick(pieces) }.joined()
    }

    private func bytes() -> [UInt8] {
        random.chance(0.7) ? Array(text().utf8) : (0..<Int(random.next() % 9)).map { _ in UInt8(truncatingIfNeeded: random.next()) }
    }

    private func map() -> [String: String] {
        Dictionary((0..<Int(random.next() % 4)).map { _ in (text(), text()) }, uniquingKeysWith: { a, _ in a })
    }

    private func connection() -> ConnectionID { ConnectionID(rawValue: random.chance(0.3) ? UInt64.max - random.next() % 3 : random.next() % 1000) }

    private func event() -> TransportEvent {
        switch random.next() % 4 {
        case 0: .opened(connection(), WebSocketUpgrade(path: "/" + text(), query: map(), headers: map(), remoteAddress: text()))
        case 1: .message(connection(), bytes(), isBinary: random.chance(0.3))
        case 2: .closed(connection())
        default:
            .request(
                connection(),
                HTTPRequest(
                    method: pick(["GET", "POST"]), path: "/" + text(), query: map(), headers: map(), body: bytes(), remoteAddress: text(),
                    listener: pick([.client, .admin])))
        }
    }

    private func command() -> OutboundCommand {
        switch random.next() % 4 {
        case 0: .send(connection(), bytes())
        case 1: .sendBinary(connection(), bytes())
        case 2: .close(connection(), CloseCode(rawValue: UInt16(truncatingIfNeeded: random.next())), reason: text())
        default:
            .respond(
                connection(),
                HTTPResponse(
                    status: Int(random.next() % 600), contentType: random.chance(0.5) ? text() : nil,
                    headers: (0..<Int(random.next() % 3)).map { _ in (text(), text()) }, body: bytes()))
        }
    }

    private func batch() -> TunnelBatch {
        TunnelBatch(
            generation: Int64(bitPattern: random.next() % 5 == 0 ? random.next() : random.next() % 100),
            events: (0..<Int(random.next() % 5)).map { _ in event() }, commands: (0..<Int(random.next() % 5)).map { _ in command() },
            ping: random.chance(0.3) ? Int64(bitPattern: random.next()) : nil, pong: random.chance(0.3) ? Int64(bitPattern: random.next()) : nil,
            reports: random.chance(0.5),
            handled: Dictionary((0..<Int(random.next() % 4)).map { _ in (connection(), Int(random.next() % 1000) + 1) }, uniquingKeysWith: +))
    }

    /// What either side reads is what the other wrote, both ways, for a thousand batches.
    func test_itReadsWhatCodableWritesAndCodableReadsWhatItWrites() throws {
        for _ in 0..<1000 {
            let batch = batch()
            XCTAssertEqual(try TunnelBatch.decode(String(decoding: try JSONEncoder().encode(batch), as: UTF8.self)), batch)
            XCTAssertEqual(try JSONDecoder().decode(TunnelBatch.self, from: Data(batch.json())), batch)
            XCTAssertEqual(try TunnelBatch.decode(batch.encoded()), batch)
        }
    }

    func test_nodeMessagesReadAndWriteAsCodableDoes() throws {
        for _ in 0..<200 {
            let message = NodeMessage(id: text(), from: text(), kind: text(), body: batch().encoded())
            XCTAssertEqual(NodeMessage.read(Array(try JSONEncoder().encode(message))), message)
            XCTAssertEqual(try JSONDecoder().decode(NodeMessage.self, from: Data(message.json())), message)
        }
        XCTAssertNil(NodeMessage.read(Array(#"{"ref":"m1@node-a"}"#.utf8)), "a payload by reference is no message")
        XCTAssertEqual(
            NodeMessage.read(Array(#" { "kind":"k", "later":[1,{"x":null}], "id":"i","from":"f","body":"b" } "#.utf8)),
            NodeMessage(id: "i", from: "f", kind: "k", body: "b"), "members in any order, unknown ones skipped")
    }

    /// Members a newer build may add are skipped; `null` stands for an absent optional.
    func test_unknownMembersAreSkippedAndNullsAreAbsent() throws {
        let body = #"{"g":3,"new":{"a":[1,2.5e-3,-0,true,null,"x"]},"e":[{"c":7,"k":"closed","z":[]}],"c":null,"pi":null,"r":false,"h":null}"#
        XCTAssertEqual(try TunnelBatch.decode(body), TunnelBatch(generation: 3, events: [.closed(ConnectionID(rawValue: 7))]))
    }

    /// Malformed text is refused `invalid_request`, never read in part nor a crash.
    func test_malformedBatchesAreRefused() {
        let bodies = [
            "", "{", "[]", #"{"e":[]}"#, #"{"g":1.5}"#, #"{"g":1e3}"#, #"{"g":01}"#, #"{"g":9223372036854775808}"#, #"{"g":1}x"#,
            #"{"g":1,"e":[{"k":"closed"}]}"#, #"{"g":1,"e":[{"c":-1,"k":"closed"}]}"#, #"{"g":1,"e":[{"c":1,"k":"nope"}]}"#,
            #"{"g":1,"e":[{"c":1,"k":"open","p":"/"}]}"#, #"{"g":1,"c":[{"c":1,"k":"close","o":70000,"r":""}]}"#,
            #"{"g":1,"c":[{"c":1,"k":"respond","s":200,"h":[["a"]]}]}"#, #"{"g":1,"c":[{"c":1,"k":"send","b":"***"}]}"#,
            #"{"g":1,"h":[[1,0]]}"#, #"{"g":1,"h":[[1,9223372036854775807],[1,1]]}"#, #"{"g":1,"e":[{"c":1,"k":"message","t":"\x"}]}"#,
            #"{"g":1,"e":[{"c":1,"k":"message","t":"a"#, "{\"g\":1,\"e\":[{\"c\":1,\"k\":\"message\",\"t\":\"\u{1}\"}]}",
            String(repeating: "[", count: 100) + #"{"g":1}"#, #"{"g":1,"x":"# + String(repeating: "[", count: 100) + String(repeating: "]", count: 100) + "}",
        ]
        for body in bodies {
            XCTAssertThrowsError(try TunnelBatch.decode(body), body) { error in
                XCTAssertEqual((error as? SwitchboardError)?.code, .invalidRequest, body)
            }
        }
    }
}
