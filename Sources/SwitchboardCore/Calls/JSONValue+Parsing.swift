/// Builds a ``JSONValue`` from bytes that ``JSONScanner`` has validated: strict RFC 8259,
/// nesting capped at ``JSONScanner/maximumDepth``. Much cheaper than `JSONDecoder` through
/// `Codable`, which tries every type in turn and throws for each miss; the call protocol parses
/// every frame with it.
struct JSONValueBuilder {
    private let bytes: [UInt8]
    private var index = 0

    /// The value in `bytes`; `nil` when they are not exactly one JSON value, nest too deep, or
    /// hold a number a `Double` cannot represent (`1e999`).
    static func parse(_ bytes: [UInt8]) -> JSONValue? {
        do { try JSONScanner.validate(bytes) } catch { return nil }
        var builder = JSONValueBuilder(bytes: bytes)
        return builder.value()
    }

    private init(bytes: [UInt8]) { self.bytes = bytes }

    private mutating func skipWhitespace() {
        while index < bytes.count {
            switch bytes[index] {
            case 0x20, 0x09, 0x0A, 0x0D: index += 1
            default: return
            }
        }
    }

    /// The value at `index` (syntax already checked); `nil` only for a non-finite number.
    private mutating func value() -> JSONValue? {
        skipWhitespace()
        switch bytes[index] {
        case UInt8(ascii: "{"): return object()
        case UInt8(ascii: "["): return array()
        case UInt8(ascii: "\""): return .string(string())
        case UInt8(ascii: "t"): index += 4; return .bool(true)
        case UInt8(ascii: "f"): index += 5; return .bool(false)
        case UInt8(ascii: "n"): index += 4; return .null
        default: return number()
        }
    }

    private mutating func object() -> JSONValue? {
        index += 1
        var members: [String: JSONValue] = [:]
        skipWhitespace()
        if bytes[index] == UInt8(ascii: "}") { index += 1; return .object(members) }
        while true {
            skipWhitespace()
            let key = string()
            skipWhitespace()
            index += 1  // ':'
            guard let member = value() else { return nil }
            members[key] = member  // a repeated key: the last one wins
            skipWhitespace()
            let separator = bytes[index]
            index += 1
            if separator == UInt8(ascii: "}") { return .object(members) }
        }
    }

    private mutating func array() -> JSONValue? {
        index += 1
        var elements: [JSONValue] = []
        skipWhitespace()
        if bytes[index] == UInt8(ascii: "]") { index += 1; return .array(elements) }
        while true {
            guard let element = value() else { return nil }
            elements.append(element)
            skipWhitespace()
            let separator = bytes[index]
            index += 1
            if separator == UInt8(ascii: "]") { return .array(elements) }
        }
    }

    /// The string literal at `index`, unescaped.
    private mutating func string() -> String {
        let start = index + 1
        var end = start
        var escaped = false
        while escaped || bytes[end] != UInt8(ascii: "\"") {
            escaped = !escaped && bytes[end] == UInt8(ascii: "\\")
            end += 1
        }
        index = end + 1
        return JSONStringUnescaper.unescape(bytes[start..<end])
    }

    private mutating func number() -> JSONValue? {
        let start = index
        while index < bytes.count, Self.isNumberByte(bytes[index]) { index += 1 }
        guard let value = Double(String(decoding: bytes[start..<index], as: UTF8.self)), value.isFinite else { return nil }
        return .number(value)
    }

    private static func isNumberByte(_ byte: UInt8) -> Bool {
        (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) || byte == UInt8(ascii: "-") || byte == UInt8(ascii: "+")
            || byte == UInt8(ascii: ".") || byte == UInt8(ascii: "e") || byte == UInt8(ascii: "E")
    }
}
