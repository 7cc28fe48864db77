import Foundation

/// The tunnel's JSON by hand (``TunnelJSONReader``, ``TunnelJSONWriter``): the same text the
/// `Codable` conformances in TunnelWire.swift read and write, so daemons of either build read
/// each other, at a fraction of Foundation's cost. `TunnelJSONTests` hold the two to each other.
extension TunnelBatch {
    /// The batch as JSON.
    public func json() -> [UInt8] {
        var out = TunnelJSONWriter(capacity: 128 + events.count * 96 + commands.count * 96)
        out.beginObject()
        out.key("g")
        out.integer(generation)
        if !events.isEmpty {
            out.key("e")
            out.beginArray()
            for event in events { Self.write(event, to: &out) }
            out.endArray()
        }
        if !commands.isEmpty {
            out.key("c")
            out.beginArray()
            for command in commands { Self.write(command, to: &out) }
            out.endArray()
        }
        if let ping {
            out.key("pi")
            out.integer(ping)
        }
        if let pong {
            out.key("po")
            out.integer(pong)
        }
        if reports {
            out.key("r")
            out.bool(true)
        }
        if !handled.isEmpty {
            out.key("h")
            out.beginArray()
            for (connection, count) in handled.sorted(by: { $0.key < $1.key }) {
                out.beginArray()
                out.integer(connection.rawValue)
                out.integer(count)
                out.endArray()
            }
            out.endArray()
        }
        out.endObject()
        return out.bytes
    }

    /// Reads a batch's JSON.
    static func read(_ bytes: [UInt8]) throws(TunnelJSONReader.Malformed) -> TunnelBatch {
        try TunnelJSONReader.read(bytes) { reader throws(TunnelJSONReader.Malformed) in
            var generation: Int64?
            var batch = TunnelBatch(generation: 0)
            try reader.object { reader, key throws(TunnelJSONReader.Malformed) in
                switch key {
                case "g": generation = try reader.int64()
                case "e": if !reader.null() { try reader.array { reader throws(TunnelJSONReader.Malformed) in batch.events.append(try readEvent(&reader)) } }
                case "c": if !reader.null() { try reader.array { reader throws(TunnelJSONReader.Malformed) in batch.commands.append(try readCommand(&reader)) } }
                case "pi": batch.ping = reader.null() ? nil : try reader.int64()
                case "po": batch.pong = reader.null() ? nil : try reader.int64()
                case "r": batch.reports = reader.null() ? false : try reader.bool()
                case "h": if !reader.null() { try readHandled(&reader, into: &batch.handled) }
                default: try reader.skipValue()
                }
            }
            guard let generation else { throw reader.fail("a batch without its generation") }
            batch.generation = generation
            return batch
        }
    }

    private static func readHandled(_ reader: inout TunnelJSONReader, into handled: inout [ConnectionID: Int]) throws(TunnelJSONReader.Malformed) {
        try reader.array { reader throws(TunnelJSONReader.Malformed) in
            var pair: [UInt64] = []
            try reader.array { reader throws(TunnelJSONReader.Malformed) in pair.append(try reader.uint64()) }
            guard pair.count == 2, pair[1] > 0, pair[1] <= UInt64(Int.max) else { throw reader.fail("handled is [connection, count] pairs") }
            let (sum, overflow) = handled[ConnectionID(rawValue: pair[0]), default: 0].addingReportingOverflow(Int(pair[1]))
            guard !overflow else { throw reader.fail("a handled count out of range") }
            handled[ConnectionID(rawValue: pair[0])] = sum
        }
    }

    // MARK: - Events and commands

    private static func writeBytes(_ bytes: [UInt8], to out: inout TunnelJSONWriter) {
        if String(validating: bytes, as: UTF8.self) != nil {
            out.key("t")
            out.string(utf8: bytes)
        } else {
            out.key("b")
            out.string(Data(bytes).base64EncodedString())
        }
    }

    private static func write(_ event: TransportEvent, to out: inout TunnelJSONWriter) {
        out.beginObject()
        switch event {
        case .opened(let id, let upgrade):
            head(id, "open", &out)
            field("p", upgrade.path, &out)
            out.key("q")
            out.stringMap(upgrade.query)
            out.key("h")
            out.stringMap(upgrade.headers)
            field("a", upgrade.remoteAddress, &out)
        case .message(let id, let bytes, let isBinary):
            head(id, "message", &out)
            if isBinary {
                out.key("x")
                out.bool(true)
            }
            writeBytes(bytes, to: &out)
        case .closed(let id):
            head(id, "closed", &out)
        case .request(let id, let request):
            head(id, "request", &out)
            field("m", request.method, &out)
            field("p", request.path, &out)
            out.key("q")
            out.stringMap(request.query)
            out.key("h")
            out.stringMap(request.headers)
            field("a", request.remoteAddress, &out)
            field("l", request.listener.rawValue, &out)
            writeBytes(request.body, to: &out)
        }
        out.endObject()
    }

    private static func write(_ command: OutboundCommand, to out: inout TunnelJSONWriter) {
        out.beginObject()
        switch command {
        case .send(let id, let bytes):
            head(id, "send", &out)
            writeBytes(bytes, to: &out)
        case .sendBinary(let id, let bytes):
            head(id, "sendBinary", &out)
            writeBytes(bytes, to: &out)
        case .close(let id, let code, let reason):
            head(id, "close", &out)
            out.key("o")
            out.integer(code.rawValue)
            field("r", reason, &out)
        case .respond(let id, let response):
            head(id, "respond", &out)
            out.key("s")
            out.integer(response.status)
            if let contentType = response.contentType { field("y", contentType, &out) }
            out.key("h")
            out.beginArray()
            for header in response.headers {
                out.beginArray()
                out.string(header.name)
                out.string(header.value)
                out.endArray()
            }
            out.endArray()
            writeBytes(response.body, to: &out)
        }
        out.endObject()
    }

    private static func head(_ id: ConnectionID, _ kind: String, _ out: inout TunnelJSONWriter) {
        out.key("c")
        out.integer(id.rawValue)
        field("k", kind, &out)
    }

    private static func field(_ key: String, _ value: String, _ out: inout TunnelJSONWriter) {
        out.key(key)
        out.string(value)
    }

    /// One event's or command's members, as read (every one optional until its kind says).
    private struct Fields {
        var connection: UInt64?, kind: String?, text: ArraySlice<UInt8>?, base64: String?, binary = false
        var path: String?, query: [String: String]?, headers: [String: String]?, remote: String?, method: String?, listener: String?
        var code: UInt64?, reason: String?, status: Int64?, contentType: String?, headerPairs: [(name: String, value: String)]?

        func need<T>(_ value: T?, _ name: String, _ reader: TunnelJSONReader) throws(TunnelJSONReader.Malformed) -> T {
            guard let value else { throw reader.fail("\(kind ?? "an event") without \(name)") }
            return value
        }

        func bytes(_ reader: TunnelJSONReader) throws(TunnelJSONReader.Malformed) -> [UInt8] {
            if let text { return Array(text) }
            guard let base64 else { return [] }
            guard let data = Data(base64Encoded: base64) else { throw reader.fail("not base64") }
            return Array(data)
        }
    }

    private static func readFields(_ reader: inout TunnelJSONReader) throws(TunnelJSONReader.Malformed) -> Fields {
        var fields = Fields()
        try reader.object { reader, key throws(TunnelJSONReader.Malformed) in
            switch key {
            case "c": fields.connection = try reader.uint64()
            case "k": fields.kind = try reader.string()
            case "t": fields.text = reader.null() ? nil : try reader.stringBytes()
            case "b": fields.base64 = reader.null() ? nil : try reader.string()
            case "x": fields.binary = reader.null() ? false : try reader.bool()
            case "p": fields.path = try reader.string()
            case "q": fields.query = try reader.stringMap()
            case "h":
                // Headers: an object of strings on events, [name, value] pairs on a response.
                var pairs: [(name: String, value: String)] = []
                var map: [String: String] = [:]
                var isMap = false
                var copy = reader
                if (try? copy.stringMap()) != nil {
                    map = try reader.stringMap()
                    isMap = true
                } else {
                    try reader.array { reader throws(TunnelJSONReader.Malformed) in
                        var pair: [String] = []
                        try reader.array { reader throws(TunnelJSONReader.Malformed) in pair.append(try reader.string()) }
                        guard pair.count == 2 else { throw reader.fail("a header is a [name, value] pair") }
                        pairs.append((pair[0], pair[1]))
                    }
                }
                if isMap { fields.headers = map } else { fields.headerPairs = pairs }
            case "a": fields.remote = try reader.string()
            case "m": fields.method = try reader.string()
            case "l": fields.listener = try reader.string()
            case "o": fields.code = try reader.uint64()
            case "r": fields.reason = try reader.string()
            case "s": fields.status = try reader.int64()
            case "y": fields.contentType = reader.null() ? nil : try reader.string()
            default: try reader.skipValue()
            }
        }
        return fields
    }

    private static func readEvent(_ reader: inout TunnelJSONReader) throws(TunnelJSONReader.Malformed) -> TransportEvent {
        let f = try readFields(&reader)
        let id = ConnectionID(rawValue: try f.need(f.connection, "c", reader))
        switch try f.need(f.kind, "k", reader) {
        case "open":
            return .opened(
                id,
                WebSocketUpgrade(
                    path: try f.need(f.path, "p", reader), query: try f.need(f.query, "q", reader), headers: try f.need(f.headers, "h", reader),
                    remoteAddress: try f.need(f.remote, "a", reader)))
        case "message":
            return .message(id, try f.bytes(reader), isBinary: f.binary)
        case "closed":
            return .closed(id)
        case "request":
            let listener = try f.need(f.listener, "l", reader)
            guard let role = ListenerRole(rawValue: listener) else { throw reader.fail("unknown listener \(listener)") }
            return .request(
                id,
                HTTPRequest(
                    method: try f.need(f.method, "m", reader), path: try f.need(f.path, "p", reader), query: try f.need(f.query, "q", reader),
                    headers: try f.need(f.headers, "h", reader), body: try f.bytes(reader), remoteAddress: try f.need(f.remote, "a", reader),
                    listener: role))
        case let kind:
            throw reader.fail("unknown event kind \(kind)")
        }
    }

    private static func readCommand(_ reader: inout TunnelJSONReader) throws(TunnelJSONReader.Malformed) -> OutboundCommand {
        let f = try readFields(&reader)
        let id = ConnectionID(rawValue: try f.need(f.connection, "c", reader))
        switch try f.need(f.kind, "k", reader) {
        case "send":
            return .send(id, try f.bytes(reader))
        case "sendBinary":
            return .sendBinary(id, try f.bytes(reader))
        case "close":
            let code = try f.need(f.code, "o", reader)
            guard code <= UInt64(UInt16.max) else { throw reader.fail("a close code out of range") }
            return .close(id, CloseCode(rawValue: UInt16(code)), reason: try f.need(f.reason, "r", reader))
        case "respond":
            let status = try f.need(f.status, "s", reader)
            guard let status = Int(exactly: status) else { throw reader.fail("a status out of range") }
            return .respond(
                id,
                HTTPResponse(status: status, contentType: f.contentType, headers: try f.need(f.headerPairs, "h", reader), body: try f.bytes(reader)))
        case let kind:
            throw reader.fail("unknown command kind \(kind)")
        }
    }
}
