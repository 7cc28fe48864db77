import Foundation
import XCTest

@testable import SwitchboardKit

/// A conversation recorded from the real daemon (`clients/js/tools/record-fixtures.mjs`): one
/// entry per frame sent or received, per connection. The browser library's tests replay the
/// same files.
struct Transcript {
    struct Entry {
        let conn: String
        let sent: Bool
        let frame: JSONValue
        let text: String
    }

    let entries: [Entry]

    static let directory = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("clients/js/test/fixtures")

    init(_ name: String) throws {
        let data = try Data(contentsOf: Self.directory.appendingPathComponent(name + ".json"))
        let list = try JSONDecoder().decode([JSONValue].self, from: data)
        entries = list.compactMap { item in
            guard let conn = item["conn"]?.stringValue, let direction = item["dir"]?.stringValue, let frame = item["frame"] else { return nil }
            return Entry(conn: conn, sent: direction == "send", frame: frame, text: Wire.encode(frame))
        }
    }
}

/// Plays a transcript into one ``CallModel`` per (connection, call), the way the client library
/// applies frames: answers by the request they answer, events in `seq` order. Before applying a
/// state answer it checks that the event-built participants equal the server's, order included.
final class Replayer {
    var models: [String: [String: CallModel]] = [:]
    var sequencers: [String: EventSequencer] = [:]
    var users: [String: String] = [:]
    var requests: [String: [JSONValue: (type: String, data: JSONValue)]] = [:]
    var events: [String: [ServerEvent]] = [:]
    var mismatches: [String] = []

    func model(_ conn: String, _ cid: String) -> CallModel {
        models[conn]?[cid] ?? CallModel(callID: CallID(cid: cid)!)
    }

    func play(_ transcript: Transcript, through last: Int? = nil, file: StaticString = #filePath, line: UInt = #line) throws {
        for (index, entry) in transcript.entries.enumerated() {
            if let last, index > last { break }
            if entry.sent {
                if let id = entry.frame["id"], let type = entry.frame["type"]?.stringValue {
                    requests[entry.conn, default: [:]][id] = (type, entry.frame["data"] ?? .null)
                }
                continue
            }
            try receive(entry, file: file, line: line)
        }
    }

    private func receive(_ entry: Transcript.Entry, file: StaticString, line: UInt) throws {
        let conn = entry.conn
        switch try ServerFrame.parse(entry.text) {
        case .connectionOK(let info):
            users[conn] = info.userId
            var sequencer = sequencers[conn] ?? EventSequencer()
            _ = sequencer.connected(info, hadConnection: false)
            sequencers[conn] = sequencer
        case .event(let event):
            var sequencer = sequencers[conn] ?? EventSequencer()
            let verdict = sequencer.accept(event.seq)
            sequencers[conn] = sequencer
            XCTAssertEqual(verdict, .deliver, "\(conn) seq \(event.seq)", file: file, line: line)
            events[conn, default: []].append(event)
            guard let cid = event.callCID else { return }
            var model = model(conn, cid)
            model.apply(event, me: users[conn] ?? "")
            models[conn, default: [:]][cid] = model
        case .response(_, let data):
            guard let id = entry.frame["id"], let request = requests[conn]?[id], let cid = cid(of: request.data) else { return }
            var model = model(conn, cid)
            switch request.type {
            case "call.join":
                let join = try Wire.decode(JoinResult.self, from: data)
                model.applyJoin(join)
            case "call.leave":
                if case .array(let left)? = data["left"] { model.applyLeft(left.compactMap(\.stringValue)) }
            case "call.get", "call.get_or_create", "call.accept", "call.reject", "call.end", "call.invite":
                let snapshot = try Wire.decode(CallSnapshot.self, from: data)
                // call.end answers the ended state (nobody left); the others change no participant.
                if model.info != nil, request.type != "call.end", model.participants != snapshot.participants {
                    mismatches.append("\(conn) \(request.type): events gave \(model.participants.map(\.sessionId)), the server \(snapshot.participants.map(\.sessionId))")
                }
                model.apply(snapshot)
            default:
                return
            }
            models[conn, default: [:]][cid] = model
        case .error, .pong:
            return
        }
    }

    private func cid(of data: JSONValue) -> String? {
        guard let type = data["type"]?.stringValue, let id = data["id"]?.stringValue else { return nil }
        return "\(type):\(id)"
    }
}
