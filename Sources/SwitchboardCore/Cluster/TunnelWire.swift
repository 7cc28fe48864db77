import Foundation

/// What a relaying node and the leading node tell each other about sockets (ADR 0012): the
/// transport events of a relaying node's sockets, on their way to the leader, and the commands
/// the leader's hubs give for them, on their way back. One batch goes in one bus message, with
/// the leadership's generation it was made under: a batch of another generation is dropped.
///
/// Text frames travel as JSON strings; binary frames, request bodies and text that is not valid
/// UTF-8 travel as base64.
public struct TunnelBatch: Sendable, Equatable, Codable {
    /// The bus message kind of events, relaying node → leader.
    public static let eventsKind = "tunnel.events"
    /// The bus message kind of commands, leader → relaying node.
    public static let commandsKind = "tunnel.commands"

    /// The generation of the leadership the sender addresses (or holds).
    public var generation: Int64
    /// Relaying node → leader: its sockets' events, in order per connection.
    public var events: [TransportEvent]
    /// Leader → relaying node: commands for its sockets, in order per connection.
    public var commands: [OutboundCommand]
    /// Relaying node → leader: a probe the leader sends straight back as ``pong`` (the sender's
    /// clock reading), to time the round trip the relayed frames take.
    public var ping: Int64?
    /// Leader → relaying node: a ``ping`` sent back.
    public var pong: Int64?
    /// Flow control across the bus. Leader → relaying node: this leader reports the messages its
    /// hubs handled (``handled``); relaying node → leader: report this batch's messages. Both
    /// ends set it, so a node of an older build, which sets nothing, is never waited for.
    public var reports: Bool
    /// Leader → relaying node: how many more messages of each socket (the relaying node's ids)
    /// the leader's hubs handled, of batches that asked.
    public var handled: [ConnectionID: Int]

    public init(
        generation: Int64, events: [TransportEvent] = [], commands: [OutboundCommand] = [], ping: Int64? = nil, pong: Int64? = nil,
        reports: Bool = false, handled: [ConnectionID: Int] = [:]
    ) {
        self.generation = generation
        self.events = events
        self.commands = commands
        self.ping = ping
        self.pong = pong
        self.reports = reports
        self.handled = handled
    }

    /// The batch as the JSON text of a bus message body (TunnelBatch+JSON.swift).
    public func encoded() -> String {
        String(decoding: json(), as: UTF8.self)
    }

    /// Reads a bus message body; a malformed one is `invalid_request`.
    public static func decode(_ body: String) throws(SwitchboardError) -> TunnelBatch {
        do {
            return try read(Array(body.utf8))
        } catch {
            throw SwitchboardError(.invalidRequest, "a tunnel batch that does not decode: \(error)")
        }
    }

    enum CodingKeys: String, CodingKey {
        case generation = "g", events = "e", commands = "c", ping = "pi", pong = "po", reports = "r", handled = "h"
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        generation = try container.decode(Int64.self, forKey: .generation)
        events = try container.decodeIfPresent([TransportEvent].self, forKey: .events) ?? []
        commands = try container.decodeIfPresent([OutboundCommand].self, forKey: .commands) ?? []
        ping = try container.decodeIfPresent(Int64.self, forKey: .ping)
        pong = try container.decodeIfPresent(Int64.self, forKey: .pong)
        reports = try container.decodeIfPresent(Bool.self, forKey: .reports) ?? false
        handled = [:]
        for pair in try container.decodeIfPresent([[UInt64]].self, forKey: .handled) ?? [] {
            guard pair.count == 2, pair[1] > 0, pair[1] <= UInt64(Int.max) else {
                throw DecodingError.dataCorruptedError(forKey: .handled, in: container, debugDescription: "handled is [connection, count] pairs")
            }
            handled[ConnectionID(rawValue: pair[0]), default: 0] += Int(pair[1])
        }
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(generation, forKey: .generation)
        if !events.isEmpty { try container.encode(events, forKey: .events) }
        if !commands.isEmpty { try container.encode(commands, forKey: .commands) }
        try container.encodeIfPresent(ping, forKey: .ping)
        try container.encodeIfPresent(pong, forKey: .pong)
        if reports { try container.encode(true, forKey: .reports) }
        if !handled.isEmpty {
            try container.encode(handled.sorted { $0.key < $1.key }.map { [$0.key.rawValue, UInt64($0.value)] }, forKey: .handled)
        }
    }
}

/// The field names of one event or command on the wire (short: a batch may carry many).
enum TunnelKey: String, CodingKey {
    case connection = "c", kind = "k", text = "t", base64 = "b", binary = "x"
    case path = "p", query = "q", headers = "h", remote = "a", method = "m", listener = "l"
    case code = "o", reason = "r", status = "s", contentType = "y"
}

extension KeyedEncodingContainer<TunnelKey> {
    /// Bytes as text when they are UTF-8 (the usual JSON frame), else as base64.
    mutating func encodeBytes(_ bytes: [UInt8]) throws {
        if let text = String(validating: bytes, as: UTF8.self) {
            try encode(text, forKey: .text)
        } else {
            try encode(Data(bytes).base64EncodedString(), forKey: .base64)
        }
    }
}

extension KeyedDecodingContainer<TunnelKey> {
    func decodeBytes() throws -> [UInt8] {
        if let text = try decodeIfPresent(String.self, forKey: .text) { return Array(text.utf8) }
        guard let base64 = try decodeIfPresent(String.self, forKey: .base64) else { return [] }
        guard let data = Data(base64Encoded: base64) else {
            throw DecodingError.dataCorruptedError(forKey: .base64, in: self, debugDescription: "not base64")
        }
        return Array(data)
    }

    func connection() throws -> ConnectionID { ConnectionID(rawValue: try decode(UInt64.self, forKey: .connection)) }
}

extension TransportEvent: Codable {
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: TunnelKey.self)
        switch self {
        case .opened(let id, let upgrade):
            try container.encode(id.rawValue, forKey: .connection)
            try container.encode("open", forKey: .kind)
            try container.encode(upgrade.path, forKey: .path)
            try container.encode(upgrade.query, forKey: .query)
            try container.encode(upgrade.headers, forKey: .headers)
            try container.encode(upgrade.remoteAddress, forKey: .remote)
        case .message(let id, let bytes, let isBinary):
            try container.encode(id.rawValue, forKey: .connection)
            try container.encode("message", forKey: .kind)
            if isBinary { try container.encode(true, forKey: .binary) }
            try container.encodeBytes(bytes)
        case .closed(let id):
            try container.encode(id.rawValue, forKey: .connection)
            try container.encode("closed", forKey: .kind)
        case .request(let id, let request):
            try container.encode(id.rawValue, forKey: .connection)
            try container.encode("request", forKey: .kind)
            try container.encode(request.method, forKey: .method)
            try container.encode(request.path, forKey: .path)
            try container.encode(request.query, forKey: .query)
            try container.encode(request.headers, forKey: .headers)
            try container.encode(request.remoteAddress, forKey: .remote)
            try container.encode(request.listener.rawValue, forKey: .listener)
            try container.encodeBytes(request.body)
        }
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: TunnelKey.self)
        let id = try container.connection()
        switch try container.decode(String.self, forKey: .kind) {
        case "open":
            self = .opened(
                id,
                WebSocketUpgrade(
                    path: try container.decode(String.self, forKey: .path), query: try container.decode([String: String].self, forKey: .query),
                    headers: try container.decode([String: String].self, forKey: .headers), remoteAddress: try container.decode(String.self, forKey: .remote)))
        case "message":
            self = .message(id, try container.decodeBytes(), isBinary: try container.decodeIfPresent(Bool.self, forKey: .binary) ?? false)
        case "closed":
            self = .closed(id)
        case "request":
            let listener = try container.decode(String.self, forKey: .listener)
            guard let role = ListenerRole(rawValue: listener) else {
                throw DecodingError.dataCorruptedError(forKey: .listener, in: container, debugDescription: "unknown listener \(listener)")
            }
            self = .request(
                id,
                HTTPRequest(
                    method: try container.decode(String.self, forKey: .method), path: try container.decode(String.self, forKey: .path),
                    query: try container.decode([String: String].self, forKey: .query), headers: try container.decode([String: String].self, forKey: .headers),
                    body: try container.decodeBytes(), remoteAddress: try container.decode(String.self, forKey: .remote), listener: role))
        case let kind:
            throw DecodingError.dataCorruptedError(forKey: .kind, in: container, debugDescription: "unknown event kind \(kind)")
        }
    }
}

extension OutboundCommand: Codable {
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: TunnelKey.self)
        try container.encode(connection.rawValue, forKey: .connection)
        switch self {
        case .send(_, let bytes):
            try container.encode("send", forKey: .kind)
            try container.encodeBytes(bytes)
        case .sendBinary(_, let bytes):
            try container.encode("sendBinary", forKey: .kind)
            try container.encodeBytes(bytes)
        case .close(_, let code, let reason):
            try container.encode("close", forKey: .kind)
            try container.encode(code.rawValue, forKey: .code)
            try container.encode(reason, forKey: .reason)
        case .respond(_, let response):
            try container.encode("respond", forKey: .kind)
            try container.encode(response.status, forKey: .status)
            try container.encodeIfPresent(response.contentType, forKey: .contentType)
            try container.encode(response.headers.map { [$0.name, $0.value] }, forKey: .headers)
            try container.encodeBytes(response.body)
        }
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: TunnelKey.self)
        let id = try container.connection()
        switch try container.decode(String.self, forKey: .kind) {
        case "send":
            self = .send(id, try container.decodeBytes())
        case "sendBinary":
            self = .sendBinary(id, try container.decodeBytes())
        case "close":
            self = .close(id, CloseCode(rawValue: try container.decode(UInt16.self, forKey: .code)), reason: try container.decode(String.self, forKey: .reason))
        case "respond":
            let pairs = try container.decode([[String]].self, forKey: .headers)
            guard pairs.allSatisfy({ $0.count == 2 }) else {
                throw DecodingError.dataCorruptedError(forKey: .headers, in: container, debugDescription: "a header is a [name, value] pair")
            }
            self = .respond(
                id,
                HTTPResponse(
                    status: try container.decode(Int.self, forKey: .status), contentType: try container.decodeIfPresent(String.self, forKey: .contentType),
                    headers: pairs.map { (name: $0[0], value: $0[1]) }, body: try container.decodeBytes()))
        case let kind:
            throw DecodingError.dataCorruptedError(forKey: .kind, in: container, debugDescription: "unknown command kind \(kind)")
        }
    }
}
