/// The request line of a request the transport reads itself: libwebsockets hands a request
/// over unparsed, as a raw socket, when its method is one lws does not know (TRACE, QUERY, …)
/// or is `CONNECT`.
public struct RequestLine: Sendable, Equatable {
    /// The method as sent (a token, case kept).
    public var method: String
    /// The target's path, percent-decoded, without the query.
    public var path: String

    public init(method: String, path: String) {
        self.method = method
        self.path = path
    }

    /// The longest request line read, in bytes; a longer one is refused.
    public static let maxLength = 8192

    /// What the bytes read so far hold.
    public enum Reading: Sendable, Equatable {
        /// No line end yet, and nothing wrong so far.
        case incomplete
        /// Not a request line (the reason is for the answer).
        case malformed(String)
        case line(RequestLine)
    }

    /// Reads `METHOD SP target SP HTTP/x.y` and its line end from the start of `bytes`. A byte
    /// that cannot be in a request line (a control byte, non-ASCII) is malformed at once,
    /// without waiting for the line to end.
    public static func read(_ bytes: [UInt8]) -> Reading {
        let end = bytes.firstIndex(of: UInt8(ascii: "\n"))
        var line = bytes[..<(end ?? bytes.endIndex)]
        if line.last == UInt8(ascii: "\r") { line = line.dropLast() }  // before its LF, or with it
        guard line.allSatisfy({ $0 >= 0x20 && $0 < 0x7F }) else { return .malformed("the request line holds a byte that is not printable ASCII") }
        guard end != nil else {
            return bytes.count < maxLength ? .incomplete : .malformed("the request line is longer than \(maxLength) bytes")
        }
        let parts = line.split(separator: UInt8(ascii: " "), omittingEmptySubsequences: false)
        guard parts.count == 3, !parts[0].isEmpty, parts[0].allSatisfy(isTokenByte), !parts[1].isEmpty, parts[2].starts(with: "HTTP/".utf8)
        else { return .malformed("the request line is not METHOD SP target SP HTTP-version") }
        let target = parts[1].prefix { $0 != UInt8(ascii: "?") }
        guard let path = percentDecoded(target) else { return .malformed("the request target has an invalid percent-escape") }
        return .line(RequestLine(method: String(decoding: parts[0], as: UTF8.self), path: path))
    }

    /// RFC 9110 `tchar`.
    private static func isTokenByte(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "0")...UInt8(ascii: "9"): true
        default: "!#$%&'*+-.^_`|~".utf8.contains(byte)
        }
    }

    /// `%XX` decoded; `nil` for a broken escape or one that decodes to a control byte.
    private static func percentDecoded(_ bytes: ArraySlice<UInt8>) -> String? {
        var decoded: [UInt8] = []
        decoded.reserveCapacity(bytes.count)
        var index = bytes.startIndex
        while index < bytes.endIndex {
            guard bytes[index] == UInt8(ascii: "%") else {
                decoded.append(bytes[index])
                index += 1
                continue
            }
            guard index + 2 < bytes.endIndex, let high = hexValue(bytes[index + 1]), let low = hexValue(bytes[index + 2]) else { return nil }
            let byte = high << 4 | low
            guard byte >= 0x20, byte != 0x7F else { return nil }
            decoded.append(byte)
            index += 3
        }
        return String(decoding: decoded, as: UTF8.self)
    }

    private static func hexValue(_ byte: UInt8) -> UInt8? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): byte - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): byte - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): byte - UInt8(ascii: "A") + 10
        default: nil
        }
    }
}
