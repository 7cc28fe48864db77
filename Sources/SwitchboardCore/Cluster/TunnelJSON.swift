/// A small strict JSON reader and writer for what the daemons tell each other (``TunnelBatch``,
/// ``NodeMessage``): the same text Foundation's coders read and write for them, without their
/// cost, which was the largest part of a relaying daemon's profile (ADR 0012). It reads only the
/// shapes those types have: objects, arrays, strings, integers and booleans; anything else, a
/// syntax error, or nesting past ``maximumDepth`` is refused.
struct TunnelJSONReader {
    struct Malformed: Error, CustomStringConvertible {
        var offset: Int
        var why: String
        var description: String { "\(why) at byte \(offset)" }
    }

    static let maximumDepth = 32

    private let bytes: [UInt8]
    private(set) var index = 0
    private var depth = 0

    init(_ bytes: [UInt8]) { self.bytes = bytes }

    func fail(_ why: String) -> Malformed { Malformed(offset: index, why: why) }

    /// Reads one document: `body` reads its value, then only whitespace may follow.
    static func read<T>(_ bytes: [UInt8], _ body: (inout TunnelJSONReader) throws(Malformed) -> T) throws(Malformed) -> T {
        var reader = TunnelJSONReader(bytes)
        let value = try body(&reader)
        reader.skipWhitespace()
        guard reader.index == bytes.count else { throw reader.fail("trailing bytes") }
        return value
    }

    mutating func skipWhitespace() {
        while index < bytes.count, bytes[index] == 0x20 || bytes[index] == 0x0A || bytes[index] == 0x0D || bytes[index] == 0x09 { index += 1 }
    }

    private mutating func expect(_ byte: UInt8) throws(Malformed) {
        skipWhitespace()
        guard index < bytes.count, bytes[index] == byte else { throw fail("expected \(Character(Unicode.Scalar(byte)))") }
        index += 1
    }

    private mutating func peek() -> UInt8? {
        skipWhitespace()
        return index < bytes.count ? bytes[index] : nil
    }

    /// Reads an object, calling `member` with each key; it must read the member's value.
    mutating func object(_ member: (inout TunnelJSONReader, String) throws(Malformed) -> Void) throws(Malformed) {
        try expect(UInt8(ascii: "{"))
        depth += 1
        guard depth <= Self.maximumDepth else { throw fail("nested too deep") }
        if peek() == UInt8(ascii: "}") {
            index += 1
        } else {
            while true {
                let key = try string()
                try expect(UInt8(ascii: ":"))
                try member(&self, key)
                if peek() == UInt8(ascii: ",") { index += 1; continue }
                try expect(UInt8(ascii: "}"))
                break
            }
        }
        depth -= 1
    }

    /// Reads an array, calling `element` once per element; it must read the element.
    mutating func array(_ element: (inout TunnelJSONReader) throws(Malformed) -> Void) throws(Malformed) {
        try expect(UInt8(ascii: "["))
        depth += 1
        guard depth <= Self.maximumDepth else { throw fail("nested too deep") }
        if peek() == UInt8(ascii: "]") {
            index += 1
        } else {
            while true {
                try element(&self)
                if peek() == UInt8(ascii: ",") { index += 1; continue }
                try expect(UInt8(ascii: "]"))
                break
            }
        }
        depth -= 1
    }

    /// Whether the next value is `null` (read if so).
    mutating func null() -> Bool {
        guard peek() == UInt8(ascii: "n"), bytes[index...].starts(with: [0x6E, 0x75, 0x6C, 0x6C]) else { return false }
        index += 4
        return true
    }

    mutating func bool() throws(Malformed) -> Bool {
        if peek() == UInt8(ascii: "t"), bytes[index...].starts(with: Array("true".utf8)) {
            index += 4
            return true
        }
        if peek() == UInt8(ascii: "f"), bytes[index...].starts(with: Array("false".utf8)) {
            index += 5
            return false
        }
        throw fail("expected a boolean")
    }

    /// An integer without fraction or exponent (what the coders write for integer types).
    mutating func integer() throws(Malformed) -> (negative: Bool, magnitude: UInt64) {
        skipWhitespace()
        var negative = false
        if index < bytes.count, bytes[index] == UInt8(ascii: "-") {
            negative = true
            index += 1
        }
        let start = index
        var value: UInt64 = 0
        while index < bytes.count, bytes[index] >= 0x30, bytes[index] <= 0x39 {
            let (times, o1) = value.multipliedReportingOverflow(by: 10)
            let (plus, o2) = times.addingReportingOverflow(UInt64(bytes[index] - 0x30))
            guard !o1, !o2 else { throw fail("integer out of range") }
            value = plus
            index += 1
        }
        guard index > start, !(bytes[start] == 0x30 && index - start > 1) else { throw fail("expected an integer") }
        if index < bytes.count, bytes[index] == UInt8(ascii: ".") || bytes[index] == UInt8(ascii: "e") || bytes[index] == UInt8(ascii: "E") {
            throw fail("expected an integer")
        }
        return (negative, value)
    }

    mutating func uint64() throws(Malformed) -> UInt64 {
        let (negative, magnitude) = try integer()
        guard !negative || magnitude == 0 else { throw fail("expected a non-negative integer") }
        return magnitude
    }

    mutating func int64() throws(Malformed) -> Int64 {
        let (negative, magnitude) = try integer()
        if negative {
            guard magnitude <= UInt64(Int64.max) + 1 else { throw fail("integer out of range") }
            return magnitude == UInt64(Int64.max) + 1 ? Int64.min : -Int64(magnitude)
        }
        guard magnitude <= UInt64(Int64.max) else { throw fail("integer out of range") }
        return Int64(magnitude)
    }

    /// Reads any one value and drops it (a member a newer build added).
    mutating func skipValue() throws(Malformed) {
        switch peek() {
        case UInt8(ascii: "{"): try object { reader, _ throws(Malformed) in try reader.skipValue() }
        case UInt8(ascii: "["): try array { reader throws(Malformed) in try reader.skipValue() }
        case UInt8(ascii: "\""): _ = try stringBytes()
        case UInt8(ascii: "t"), UInt8(ascii: "f"): _ = try bool()
        case UInt8(ascii: "n"): guard null() else { throw fail("expected a value") }
        default: try skipNumber()
        }
    }

    private mutating func skipNumber() throws(Malformed) {
        func digits(_ reader: inout TunnelJSONReader) -> Int {
            let start = reader.index
            while reader.index < reader.bytes.count, (0x30...0x39).contains(reader.bytes[reader.index]) { reader.index += 1 }
            return reader.index - start
        }
        if index < bytes.count, bytes[index] == UInt8(ascii: "-") { index += 1 }
        guard digits(&self) > 0 else { throw fail("expected a value") }
        if index < bytes.count, bytes[index] == UInt8(ascii: ".") {
            index += 1
            guard digits(&self) > 0 else { throw fail("bad number") }
        }
        if index < bytes.count, bytes[index] == UInt8(ascii: "e") || bytes[index] == UInt8(ascii: "E") {
            index += 1
            if index < bytes.count, bytes[index] == UInt8(ascii: "+") || bytes[index] == UInt8(ascii: "-") { index += 1 }
            guard digits(&self) > 0 else { throw fail("bad number") }
        }
    }

    /// A string's bytes, unescaped (lone surrogates become U+FFFD).
    mutating func stringBytes() throws(Malformed) -> ArraySlice<UInt8> {
        try expect(UInt8(ascii: "\""))
        let start = index
        var escaped = false
        while true {
            guard index < bytes.count else { throw fail("unterminated string") }
            let byte = bytes[index]
            if byte == UInt8(ascii: "\"") { break }
            if byte < 0x20 { throw fail("control character in a string") }
            if byte == UInt8(ascii: "\\") {
                escaped = true
                guard index + 1 < bytes.count else { throw fail("unterminated string") }
                switch bytes[index + 1] {
                case UInt8(ascii: "u"):
                    guard index + 6 <= bytes.count, bytes[(index + 2)..<(index + 6)].allSatisfy(\.isHexDigit) else { throw fail("bad \\u escape") }
                    index += 6
                case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"), UInt8(ascii: "b"), UInt8(ascii: "f"), UInt8(ascii: "n"),
                    UInt8(ascii: "r"), UInt8(ascii: "t"):
                    index += 2
                default:
                    throw fail("bad escape")
                }
                continue
            }
            index += 1
        }
        let body = bytes[start..<index]
        index += 1
        guard escaped else {
            guard String(validating: body, as: UTF8.self) != nil else { throw fail("a string that is not UTF-8") }
            return body
        }
        return ArraySlice(JSONStringUnescaper.unescape(body).utf8)
    }

    mutating func string() throws(Malformed) -> String {
        String(decoding: try stringBytes(), as: UTF8.self)
    }

    /// An object of strings.
    mutating func stringMap() throws(Malformed) -> [String: String] {
        var map: [String: String] = [:]
        try object { reader, key throws(Malformed) in map[key] = try reader.string() }
        return map
    }
}

extension UInt8 {
    fileprivate var isHexDigit: Bool {
        (0x30...0x39).contains(self) || (0x41...0x46).contains(self) || (0x61...0x66).contains(self)
    }
}

/// Writes the JSON the reader above takes: members in the order written.
struct TunnelJSONWriter {
    private(set) var bytes: [UInt8] = []
    /// Per open object or array (and the document): whether a value was written in it.
    private var written = [false]
    /// A key was just written: its value takes no comma.
    private var afterKey = false

    init(capacity: Int = 256) { bytes.reserveCapacity(capacity) }

    private mutating func beforeValue() {
        if afterKey {
            afterKey = false
            return
        }
        if written[written.count - 1] { bytes.append(UInt8(ascii: ",")) }
        written[written.count - 1] = true
    }

    mutating func key(_ key: String) {
        beforeValue()
        JSONStringUnescaper.appendQuoted(key, to: &bytes)
        bytes.append(UInt8(ascii: ":"))
        afterKey = true
    }

    mutating func beginObject() {
        beforeValue()
        bytes.append(UInt8(ascii: "{"))
        written.append(false)
    }

    mutating func endObject() {
        written.removeLast()
        bytes.append(UInt8(ascii: "}"))
    }

    mutating func beginArray() {
        beforeValue()
        bytes.append(UInt8(ascii: "["))
        written.append(false)
    }

    mutating func endArray() {
        written.removeLast()
        bytes.append(UInt8(ascii: "]"))
    }

    mutating func string(_ value: String) {
        beforeValue()
        JSONStringUnescaper.appendQuoted(value, to: &bytes)
    }

    /// Bytes that are UTF-8 as a string (no copy into a `String` first).
    mutating func string(utf8 value: [UInt8]) {
        beforeValue()
        JSONStringUnescaper.appendQuoted(utf8: value, to: &bytes)
    }

    mutating func integer<T: BinaryInteger>(_ value: T) {
        beforeValue()
        bytes.append(contentsOf: String(value).utf8)
    }

    mutating func bool(_ value: Bool) {
        beforeValue()
        bytes.append(contentsOf: (value ? "true" : "false").utf8)
    }

    mutating func stringMap(_ map: [String: String]) {
        beginObject()
        for (key, value) in map.sorted(by: { $0.key < $1.key }) {
            self.key(key)
            string(value)
        }
        endObject()
    }
}
