import CSwitchboardShims
import Foundation
import SwitchboardCore

/// What goes over the socket between the daemon and its delivery worker process
/// (`switchboard webhook-worker`, ADR 0011): one JSON object per line each way. The daemon sends
/// attempts, the worker answers each once, in any order, by number.
public enum WebhookWorkerWire {
    /// One delivery attempt: POST `body` to `url` with `webhook-id` `id`, signed with `keys`.
    public struct Attempt: Sendable, Equatable {
        /// The daemon's number for the attempt; the answer carries it back.
        public var n: UInt64
        public var id: String
        public var url: String
        /// The request body, a JSON document.
        public var body: String
        /// Each signing key's bytes in base64, the current key first.
        public var keys: [String]
        /// `webhook-timestamp`, in milliseconds since 1970.
        public var now: Int64
        public var timeoutMs: Int64

        public init(n: UInt64, id: String, url: String, body: String, keys: [String], now: Int64, timeoutMs: Int64) {
            self.n = n
            self.id = id
            self.url = url
            self.body = body
            self.keys = keys
            self.now = now
            self.timeoutMs = timeoutMs
        }

        /// The attempt as one line of JSON.
        public var line: [UInt8] {
            JSONValue.object([
                "n": .number(Double(n)), "id": .string(id), "url": .string(url), "body": .string(body),
                "keys": .array(keys.map { .string($0) }), "now": .number(Double(now)), "timeout_ms": .number(Double(timeoutMs)),
            ]).bytes + [0x0A]
        }

        /// An attempt read from a line (without its newline); `nil` when it is not one.
        public init?(line: [UInt8]) {
            guard let json = JSONValue.parse(line), let n = json["n"]?.int64Value, n >= 0, let id = json["id"]?.stringValue,
                let url = json["url"]?.stringValue, let body = json["body"]?.stringValue, let keys = json["keys"]?.arrayValue,
                let now = json["now"]?.int64Value, let timeoutMs = json["timeout_ms"]?.int64Value
            else { return nil }
            let texts = keys.compactMap(\.stringValue)
            guard texts.count == keys.count else { return nil }
            self.init(n: UInt64(n), id: id, url: url, body: body, keys: texts, now: now, timeoutMs: timeoutMs)
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

/// Reads newline-terminated lines from a socket, blocking (a thread of its own calls it).
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
                start = newline + 1
                scanned = start
                if start > 65_536 {
                    buffer.removeFirst(start)
                    start = 0
                    scanned = 0
                }
                return line
            }
            scanned = buffer.count
            guard buffer.count - start < Self.maximumLine else { return nil }
            let count = SocketIO.receive(into: &chunk, from: fd)
            guard count > 0 else {
                failure = count
                return nil
            }
            buffer += chunk[0..<count]
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
