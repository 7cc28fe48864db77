import Foundation

/// An event from the server (docs/protocol.md 6.6): numbered per connection with `seq`.
public struct ServerEvent: Sendable, Equatable {
    public let type: String
    public let seq: Int64
    /// The call the event is about; `nil` for `connection.token_expiring`.
    public let callCID: String?
    public let data: JSONValue

    public init(type: String, seq: Int64, callCID: String?, data: JSONValue) {
        self.type = type
        self.seq = seq
        self.callCID = callCID
        self.data = data
    }

    /// `data` decoded as `T`.
    public func decode<T: Decodable>(_ type: T.Type) throws(SwitchboardClientError) -> T {
        try Wire.decode(T.self, from: data)
    }
}

/// What `connection.ok` says (docs/protocol.md 6.1).
public struct ConnectionInfo: Sendable, Equatable, Decodable {
    public let connectionId: String
    public let userId: String
    public let expiresAt: Int64
    public let resumeToken: String
    public let resumed: Bool
    public let replayed: Int
    public let replayComplete: Bool
    public let lastSeq: Int64
    public let sessions: [String]

    enum CodingKeys: String, CodingKey {
        case resumed, replayed, sessions
        case connectionId = "connection_id", userId = "user_id", expiresAt = "expires_at", resumeToken = "resume_token"
        case replayComplete = "replay_complete", lastSeq = "last_seq"
    }
}

/// One frame from the server.
public enum ServerFrame: Sendable, Equatable {
    case connectionOK(ConnectionInfo)
    case response(id: Int?, data: JSONValue)
    case error(id: Int?, SwitchboardClientError)
    case pong(id: Int?)
    case event(ServerEvent)

    /// One line for logs, without tokens or payloads.
    var summary: String {
        switch self {
        case .connectionOK(let info): "connection.ok resumed=\(info.resumed) last_seq=\(info.lastSeq)"
        case .response(let id, _): "response id=\(id.map(String.init) ?? "-")"
        case .error(let id, let error): "error id=\(id.map(String.init) ?? "-") \(error.code)"
        case .pong(let id): "pong id=\(id.map(String.init) ?? "-")"
        case .event(let event): "\(event.type) seq=\(event.seq) \(event.callCID ?? "")"
        }
    }

    /// Parses one text message; a frame this library cannot read is a `protocol_error`.
    public static func parse(_ text: String) throws(SwitchboardClientError) -> ServerFrame {
        let value: JSONValue
        do {
            value = try JSONDecoder().decode(JSONValue.self, from: Data(text.utf8))
        } catch {
            throw SwitchboardClientError(.protocolError, "a frame that is not JSON")
        }
        guard let type = value["type"]?.stringValue else { throw SwitchboardClientError(.protocolError, "a frame without a type") }
        let id = value["id"]?.doubleValue.map { Int($0) }
        switch type {
        case "connection.ok":
            return .connectionOK(try Wire.decode(ConnectionInfo.self, from: value["data"] ?? .null))
        case "response":
            return .response(id: id, data: value["data"] ?? .object([:]))
        case "pong":
            return .pong(id: id)
        case "error":
            let code = value["error"]?["code"]?.stringValue ?? "internal"
            let message = value["error"]?["message"]?.stringValue ?? ""
            return .error(id: id, SwitchboardClientError(.init(rawValue: code), message))
        default:
            guard let seq = value["seq"]?.int64Value else { throw SwitchboardClientError(.protocolError, "an event without seq: \(type)") }
            return .event(ServerEvent(type: type, seq: seq, callCID: value["call_cid"]?.stringValue, data: value["data"] ?? .null))
        }
    }
}

/// JSON in and out. Models name their snake_case keys themselves: a key strategy would also
/// rewrite the keys inside `custom` objects.
enum Wire {
    static func decode<T: Decodable>(_ type: T.Type, from value: JSONValue) throws(SwitchboardClientError) -> T {
        do {
            let data = try JSONEncoder().encode(value)
            return try JSONDecoder().decode(T.self, from: data)
        } catch {
            throw SwitchboardClientError(.protocolError, "cannot read \(T.self): \(error)")
        }
    }

    /// One request frame as text: `{"data":…,"id":…,"type":…}`.
    static func request(type: String, id: Int, data: [String: JSONValue]) -> String {
        encode(.object(["type": .string(type), "id": .number(Double(id)), "data": .object(data)]))
    }

    static func encode(_ value: JSONValue) -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        guard let data = try? encoder.encode(value) else { return "{}" }
        return String(decoding: data, as: UTF8.self)
    }
}
