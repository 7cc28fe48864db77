import CSwitchboardShims
import Foundation
import SwitchboardCore

/// What goes over the socket between the daemon and its delivery worker process
/// (`switchboard webhook-worker`, ADR 0011). The daemon sends attempts, each a line of JSON that
/// counts the body's bytes, then those bytes as they are (a body is never escaped into the
/// line). The worker answers each attempt once, a line of JSON, in any order, by number.
public enum WebhookWorkerWire {
    /// One delivery attempt: POST `body` to `url` with `webhook-id` `id`, signed with `keys`.
    public struct Attempt: Sendable, Equatable {
        /// The daemon's number for the attempt; the answer carries it back.
        public var n: UInt64
        public var id: String
        public var url: String
        /// The request body, a JSON document's bytes.
        public var body: [UInt8]
        /// Each signing key's bytes in base64, the current key first.
        public var keys: [String]
        /// `webhook-timestamp`, in milliseconds since 1970.
        public var now: Int64
        public var timeoutMs: Int64

        public init(n: UInt64, id: String, url: String, body: [UInt8], keys: [String], now: Int64, timeoutMs: Int64) {
            self.n = n
            self.id = id
            self.url = url
            self.body = body
            self.keys = keys
            self.now = now
            self.timeoutMs = timeoutMs
        }

        /// The attempt as it goes over the socket: its header line, then the body's bytes.
        public var frame: [UInt8] {
            var frame = JSONValue.object([
                "n": .number(Double(n)), "id": .string(id), "url": .string(url), "body_bytes": .number(Double(body.count)),
                "keys": .array(keys.map { .string($0) }), "now": .number(Double(now)), "timeout_ms": .number(Double(timeoutMs)),
            ]).bytes
            frame.reserveCapacity(frame.count + 1 + body.count)
            frame.append(0x0A)
            frame += body
            return frame
        }

        /// What reading an attempt from the socket gave.
        public enum Read: Equatable {
            case attempt(Attempt)
            /// The stream ended (or failed) where an attempt would start.
            case end
            /// A header that is not one (the stream cannot go on: where the next attempt
            /// starts is unknown), or a stream that ended inside the body.
            case unreadable(bytes: Int)
        }

        /// Reads the next attempt from `reader`.
        static func read(from reader: inout LineReader) -> Read {
            guard let header = reader.next() else { return .end }
            guard let json = JSONValue.parse(header), let n = json["n"]?.int64Value, n >= 0, let id = json["id"]?.stringValue,
                let url = json["url"]?.stringValue, let count = json["body_bytes"]?.int64Value, count >= 0, count <= LineReader.maximumLine,
                let keys = json["keys"]?.arrayValue, let now = json["now"]?.int64Value, let timeoutMs = json["timeout_ms"]?.int64Value
            else { return .unreadable(bytes: header.count) }
            let texts = keys.compactMap(\.stringValue)
            guard texts.count == keys.count else { return .unreadable(bytes: header.count) }
            guard let body = reader.take(Int(count)) else { return .unreadable(bytes: header.count) }
            return .attempt(Attempt(n: UInt64(n), id: id, url: url, body: body, keys: texts, now: now, timeoutMs: timeoutMs))
        }
    }

    /// How attempt `n` ended: the endpoint's status, or why there was none.
    public struct Answer: Sendable, Equatable {
        public var n: UInt64
        public var status: Int?
        public var failed: String?

        public init(n: UInt64, _ outcome: WebhookScheduler.Outcome) {
            self.n = n
            switch outcome {
            case .status(let status): self.status = status
            case .failed(let reason): self.failed = reason
            }
        }

        public var outcome: WebhookScheduler.Outcome {
            if let status { return .status(status) }
            return .failed(failed ?? "the delivery worker gave no reason")
        }

        /// The answer as one line of JSON.
        public var line: [UInt8] {
            var fields: [String: JSONValue] = ["n": .number(Double(n))]
            if let status { fields["status"] = .number(Double(status)) }
            if let failed { fields["failed"] = .string(failed) }
            return JSONValue.object(fields).bytes + [0x0A]
        }

        /// An answer read from a line (without its newline); `nil` when it is not one.
        public init?(line: [UInt8]) {
            guard let json = JSONValue.parse(line), let n = json["n"]?.int64Value, n >= 0 else { return nil }
            self.n = UInt64(n)
            self.status = json["status"]?.int64Value.map { Int($0) }
            self.failed = json["failed"]?.stringValue
            guard status != nil || failed != nil else { return nil }
        }
    }
}

/// Reads newline-terminated lines, and counted runs of bytes, from a socket, blocking (a thread
/// of its own calls it).
struct LineReader {
    let fd: Int32
    private var buffer: [UInt8] = []
    private var start = 0
    /// Where the search for the next newline goes on (bytes before it hold none).
    private var scanned = 0
    private var chunk = [UInt8](repeating: 0, count: 65_536)
    /// Longest line accepted; a longer one ends the stream (the peer is broken).
    static let maximumLine = 16 << 20
    /// Why the stream ended, when a read failed (a negative errno), else 0.
    private(set) var failure: Int = 0

    init(fd: Int32) {
        self.fd = fd
    }

    /// The next line without its newline, or `nil` at the end of the stream or on an error.
    mutating func next() -> [UInt8]? {
        while true {
            if let newline = buffer[scanned...].firstIndex(of: 0x0A) {
                let line = Array(buffer[start..<newline])
                consume(through: newline + 1)
                return line
            }
            scanned = buffer.count
            guard buffer.count - start < Self.maximumLine, fill() else { return nil }
        }
    }

    /// The next `count` bytes, whatever they are, or `nil` when the stream ends before them.
    mutating func take(_ count: Int) -> [UInt8]? {
        while buffer.count - start < count {
            guard fill() else { return nil }
        }
        let bytes = Array(buffer[start..<start + count])
        consume(through: start + count)
        return bytes
    }

    /// Reads what the socket has; `false` at its end or on an error.
    private mutating func fill() -> Bool {
        let count = SocketIO.receive(into: &chunk, from: fd)
        guard count > 0 else {
            failure = count
            return false
        }
        buffer += chunk[0..<count]
        return true
    }

    private mutating func consume(through end: Int) {
        start = end
        scanned = start
        if start > 65_536 {
            buffer.removeFirst(start)
            start = 0
            scanned = 0
        }
    }
}

/// The worker socket's reads and writes: the only place the webhook module hands Swift buffers
/// to the C shims.
enum SocketIO {
    /// Sends every byte of `bytes`; 0, or a negative errno.
    static func send(_ bytes: [UInt8], on fd: Int32) -> Int32 {
        bytes.withUnsafeBytes { sb_send_all(fd, $0.baseAddress, $0.count) }
    }

    /// Reads what is there into `buffer` (blocking until something is); the count, 0 at the end
    /// of the stream, or a negative errno.
    static func receive(into buffer: inout [UInt8], from fd: Int32) -> Int {
        buffer.withUnsafeMutableBytes { sb_recv(fd, $0.baseAddress, $0.count) }
    }
}
