import Foundation
import SwitchboardTransport

/// A small blocking RFC 6455 client for tests: real sockets, masked frames, explicit timeouts.
public final class WebSocketTestClient {
    /// One message or control event from the server.
    public enum Frame: Equatable, Sendable {
        case text(String)
        case binary([UInt8])
        /// A close frame (code `nil` when the frame had no payload), or `.close(nil, "eof")`
        /// when the TCP stream ended without one.
        case close(UInt16?, String)
    }

    /// The server did not answer the upgrade with 101.
    public struct HandshakeRefused: Error, CustomStringConvertible {
        public let status: Int
        /// The response's first line, e.g. `HTTP/1.1 404 Not Found`.
        public let statusLine: String
        public let body: String
        public var description: String { "handshake refused with \(status): \(body)" }
    }

    private let socket: BlockingSocket
    private var buffer: [UInt8] = []

    private init(socket: BlockingSocket, leftover: [UInt8]) {
        self.socket = socket
        self.buffer = leftover
    }

    /// Opens a WebSocket to `path` (which may carry a query) on `host:port`.
    public static func connect(
        host: String = "127.0.0.1", port: Int, path: String, headers: [String: String] = [:], timeout: Duration = .seconds(5)
    ) throws -> WebSocketTestClient {
        let socket = try BlockingSocket(host: host, port: port)
        let key = Data((0..<16).map { _ in UInt8.random(in: 0...255) }).base64EncodedString()
        var request = "GET \(path) HTTP/1.1\r\nHost: \(host):\(port)\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
        request += "Sec-WebSocket-Key: \(key)\r\nSec-WebSocket-Version: 13\r\n"
        for (name, value) in headers { request += "\(name): \(value)\r\n" }
        request += "\r\n"
        try socket.send(Array(request.utf8))
        var received: [UInt8] = []
        let deadline = ContinuousClock.now + timeout
        while !received.containsHeaderEnd {
            let chunk = try socket.receive(timeout: deadline - ContinuousClock.now)
            if chunk.isEmpty { break }
            received += chunk
        }
        let (head, rest) = received.splitAtHeaderEnd
        let status = HTTPTestClient.statusCode(head)
        guard status == 101 else {
            let statusLine = String(decoding: head.prefix { $0 != 13 && $0 != 10 }, as: UTF8.self)
            throw HandshakeRefused(status: status, statusLine: statusLine, body: String(decoding: rest, as: UTF8.self))
        }
        return WebSocketTestClient(socket: socket, leftover: rest)
    }

    /// Sends a text message in one frame.
    public func send(_ text: String) throws { try sendFrame(opcode: 0x1, payload: Array(text.utf8)) }

    /// Sends a binary message in one frame.
    public func sendBinary(_ bytes: [UInt8]) throws { try sendFrame(opcode: 0x2, payload: bytes) }

    /// Sends a text message split into `pieces` continuation frames.
    public func sendFragmented(_ text: String, pieces: Int) throws {
        let bytes = Array(text.utf8)
        let size = max(1, (bytes.count + pieces - 1) / pieces)
        var offset = 0
        var first = true
        while offset < bytes.count {
            let end = min(bytes.count, offset + size)
            try sendFrame(opcode: first ? 0x1 : 0x0, payload: Array(bytes[offset..<end]), fin: end == bytes.count)
            first = false
            offset = end
        }
    }

    /// Sends a close frame with `code`.
    public func close(code: UInt16 = 1000) throws {
        try sendFrame(opcode: 0x8, payload: [UInt8(code >> 8), UInt8(code & 0xFF)])
    }

    /// Sends one frame, masked as a client must.
    public func sendFrame(opcode: UInt8, payload: [UInt8], fin: Bool = true) throws {
        var frame: [UInt8] = [(fin ? 0x80 : 0) | opcode]
        if payload.count < 126 {
            frame.append(0x80 | UInt8(payload.count))
        } else if payload.count <= 0xFFFF {
            frame.append(0x80 | 126)
            frame += [UInt8(payload.count >> 8), UInt8(payload.count & 0xFF)]
        } else {
            frame.append(0x80 | 127)
            frame += (0..<8).reversed().map { UInt8((UInt64(payload.count) >> (UInt64($0) * 8)) & 0xFF) }
        }
        let mask = (0..<4).map { _ in UInt8.random(in: 0...255) }
        frame += mask
        frame += payload.enumerated().map { $0.element ^ mask[$0.offset % 4] }
        try socket.send(frame)
    }

    /// Whether ``next(timeout:)`` answers the server's pings (off: a client that stopped responding).
    public var answersPings = true
    /// Pings received so far.
    public private(set) var pingsReceived = 0

    /// The next message or close; answers pings (see ``answersPings``); throws on timeout.
    public func next(timeout: Duration = .seconds(5)) throws -> Frame {
        let deadline = ContinuousClock.now + timeout
        var message: [UInt8] = []
        var messageOpcode: UInt8 = 0
        while true {
            guard let (fin, opcode, payload) = try readFrame(deadline: deadline) else { return .close(nil, "eof") }
            switch opcode {
            case 0x8:
                let code = payload.count >= 2 ? UInt16(payload[0]) << 8 | UInt16(payload[1]) : nil
                return .close(code, String(decoding: payload.dropFirst(2), as: UTF8.self))
            case 0x9:
                pingsReceived += 1
                if answersPings { try sendFrame(opcode: 0xA, payload: payload) }
            case 0xA: continue
            default:
                if opcode != 0 { messageOpcode = opcode }
                message += payload
                guard fin else { continue }
                return messageOpcode == 0x2 ? .binary(message) : .text(String(decoding: message, as: UTF8.self))
            }
        }
    }

    /// The next text message, decoded as a JSON object; throws if it is anything else.
    public func nextJSON(timeout: Duration = .seconds(5)) throws -> [String: Any] {
        let frame = try next(timeout: timeout)
        guard case .text(let text) = frame,
            let object = try JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any]
        else { throw UnexpectedFrame(frame: frame) }
        return object
    }

    /// Reads until the server closes; returns the close code it sent (nil if none).
    public func awaitClose(timeout: Duration = .seconds(5)) throws -> UInt16? {
        let deadline = ContinuousClock.now + timeout
        while true {
            if case .close(let code, _) = try next(timeout: deadline - ContinuousClock.now) { return code }
        }
    }

    /// A frame other than the one a test expected.
    public struct UnexpectedFrame: Error, CustomStringConvertible {
        public let frame: Frame
        public var description: String { "unexpected frame \(frame)" }
    }

    private func readFrame(deadline: ContinuousClock.Instant) throws -> (Bool, UInt8, [UInt8])? {
        guard try fill(2, deadline: deadline) else { return nil }
        let fin = buffer[0] & 0x80 != 0
        let opcode = buffer[0] & 0x0F
        var length = Int(buffer[1] & 0x7F)
        var header = 2
        if length == 126 {
            guard try fill(4, deadline: deadline) else { return nil }
            length = Int(buffer[2]) << 8 | Int(buffer[3])
            header = 4
        } else if length == 127 {
            guard try fill(10, deadline: deadline) else { return nil }
            length = buffer[2..<10].reduce(0) { $0 << 8 | Int($1) }
            header = 10
        }
        guard try fill(header + length, deadline: deadline) else { return nil }
        let payload = Array(buffer[header..<(header + length)])
        buffer.removeFirst(header + length)
        return (fin, opcode, payload)
    }

    private func fill(_ count: Int, deadline: ContinuousClock.Instant) throws -> Bool {
        while buffer.count < count {
            let remaining = deadline - ContinuousClock.now
            guard remaining > .zero else { throw TransportError("timed out waiting for a frame") }
            let chunk = try socket.receive(timeout: remaining)
            if chunk.isEmpty { return false }
            buffer += chunk
        }
        return true
    }
}

extension [UInt8] {
    var containsHeaderEnd: Bool { headerEndIndex != nil }

    var headerEndIndex: Int? {
        guard count >= 4 else { return nil }
        for index in 0...(count - 4) where self[index] == 13 && self[index + 1] == 10 && self[index + 2] == 13 && self[index + 3] == 10 {
            return index
        }
        return nil
    }

    var splitAtHeaderEnd: ([UInt8], [UInt8]) {
        guard let end = headerEndIndex else { return (self, []) }
        return (Array(self[..<end]), Array(self[(end + 4)...]))
    }
}
