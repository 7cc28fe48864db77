/// Parses textual IPv4 and IPv6 addresses into bytes (4 or 16), without the C library.
/// IPv4-mapped IPv6 (`::ffff:1.2.3.4`) is returned as IPv4.
public enum IPAddressParser {
    public static func parse(_ text: String) -> [UInt8]? {
        var text = text
        if text.hasPrefix("["), text.hasSuffix("]") { text = String(text.dropFirst().dropLast()) }
        if let percent = text.firstIndex(of: "%") { text = String(text[..<percent]) }
        if !text.contains(":") { return ipv4(text) }
        guard let bytes = ipv6(text) else { return nil }
        if bytes[0..<10].allSatisfy({ $0 == 0 }), bytes[10] == 0xFF, bytes[11] == 0xFF { return Array(bytes[12...]) }
        return bytes
    }

    static func ipv4(_ text: String) -> [UInt8]? {
        let parts = text.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 4 else { return nil }
        var bytes: [UInt8] = []
        for part in parts {
            guard (1...3).contains(part.count), part.allSatisfy(\.isNumber), let value = UInt8(part) else { return nil }
            bytes.append(value)
        }
        return bytes
    }

    static func ipv6(_ text: String) -> [UInt8]? {
        let halves = text.components(separatedBy: "::")
        guard halves.count <= 2 else { return nil }
        // A dotted IPv4 part may only end the whole address (RFC 4291 2.2), so not before "::".
        guard let head = groups(halves[0], dottedTail: halves.count == 1),
            let tail = halves.count == 2 ? groups(halves[1], dottedTail: true) : []
        else { return nil }
        let missing = 8 - head.count - tail.count
        guard halves.count == 2 ? missing >= 1 : missing == 0 else { return nil }
        let words = head + Array(repeating: 0, count: max(0, missing)) + tail
        return words.flatMap { [UInt8($0 >> 8), UInt8($0 & 0xFF)] }
    }

    /// Colon-separated hex groups; a trailing dotted IPv4 counts as two groups.
    private static func groups(_ text: String, dottedTail: Bool) -> [UInt16]? {
        guard !text.isEmpty else { return [] }
        var result: [UInt16] = []
        let parts = text.split(separator: ":", omittingEmptySubsequences: false)
        for (index, part) in parts.enumerated() {
            if dottedTail, index == parts.count - 1, part.contains(".") {
                guard let v4 = ipv4(String(part)) else { return nil }
                result += [UInt16(v4[0]) << 8 | UInt16(v4[1]), UInt16(v4[2]) << 8 | UInt16(v4[3])]
            } else {
                // UInt16(_:radix:) alone would accept a sign ("+1", "-0").
                guard (1...4).contains(part.count), part.allSatisfy(\.isHexDigit), let value = UInt16(part, radix: 16) else { return nil }
                result.append(value)
            }
        }
        return result
    }
}
