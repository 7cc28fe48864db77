import Foundation
import SwitchboardTransport

/// A tiny HTTP/1.1 client for tests: one request per connection (`Connection: close`).
public enum HTTPTestClient {
    /// A parsed response.
    public struct Response: Sendable {
        public let status: Int
        /// Header fields, lower-case names.
        public let headers: [String: String]
        public let body: [UInt8]
        public var text: String { String(decoding: body, as: UTF8.self) }
        /// The body decoded as JSON.
        public var json: Any? { try? JSONSerialization.jsonObject(with: Data(body), options: [.fragmentsAllowed]) }
    }

    /// Sends one request and reads the whole response.
    public static func request(
        _ method: String, _ path: String, host: String = "127.0.0.1", port: Int,
        headers: [String: String] = [:], body: [UInt8] = [], timeout: Duration = .seconds(5)
    ) throws -> Response {
        let socket = try BlockingSocket(host: host, port: port)
        defer { socket.close() }
        var head = "\(method) \(path) HTTP/1.1\r\nConnection: close\r\n"
        if !headers.keys.contains(where: { $0.lowercased() == "host" }) { head += "Host: \(host):\(port)\r\n" }
        for (name, value) in headers { head += "\(name): \(value)\r\n" }
        if !body.isEmpty, !headers.keys.contains(where: { $0.lowercased() == "content-type" }) {
            head += "Content-Type: application/json\r\n"
        }
        if !body.isEmpty || ["POST", "PUT", "PATCH"].contains(method) { head += "Content-Length: \(body.count)\r\n" }
        head += "\r\n"
        try socket.send(Array(head.utf8) + body)
        var received: [UInt8] = []
        let deadline = ContinuousClock.now + timeout
        while true {
            let chunk = try socket.receive(timeout: deadline - ContinuousClock.now)
            if chunk.isEmpty { break }
            received += chunk
            if let response = parse(received, method: method) { return response }
        }
        guard let response = parse(received, method: method, atEOF: true) else {
            throw TransportError("incomplete HTTP response: \(String(decoding: received, as: UTF8.self))")
        }
        return response
    }

    static func statusCode(_ head: [UInt8]) -> Int {
        let line = String(decoding: head.prefix { $0 != 13 }, as: UTF8.self)
        let parts = line.split(separator: " ")
        return parts.count >= 2 ? Int(parts[1]) ?? 0 : 0
    }

    private static func parse(_ bytes: [UInt8], method: String, atEOF: Bool = false) -> Response? {
        guard bytes.containsHeaderEnd else { return nil }
        let (head, rest) = bytes.splitAtHeaderEnd
        var headers: [String: String] = [:]
        for line in String(decoding: head, as: UTF8.self).components(separatedBy: "\r\n").dropFirst() {
            guard let colon = line.firstIndex(of: ":") else { continue }
            headers[line[..<colon].lowercased()] = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
        }
        let length = method == "HEAD" ? 0 : Int(headers["content-length"] ?? "")
        if let length {
            guard rest.count >= length else { return nil }
            return Response(status: statusCode(head), headers: headers, body: Array(rest.prefix(length)))
        }
        return atEOF ? Response(status: statusCode(head), headers: headers, body: rest) : nil
    }
}
