import Foundation

/// The daemon's JSON parser and writer for the shared value type: objects are written with their
/// keys sorted, so equal values always encode to the same bytes.
extension JSONValue {
    /// Parses one JSON document; `nil` when the bytes are not JSON.
    public static func parse(_ bytes: some Collection<UInt8>) -> JSONValue? {
        JSONValueBuilder.parse(Array(bytes))
    }

    /// Parses stored text; `.null` when it is empty or not JSON.
    public static func parse(text: String?) -> JSONValue {
        guard let text, !text.isEmpty else { return .null }
        return parse(Array(text.utf8)) ?? .null
    }

    /// The compact encoding, keys sorted.
    public var bytes: [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(64)
        write(to: &out)
        return out
    }

    /// The compact encoding as text.
    public var text: String { String(decoding: bytes, as: UTF8.self) }

    /// Appends the compact encoding to `out`.
    public func write(to out: inout [UInt8]) {
        switch self {
        case .null: out.append(contentsOf: "null".utf8)
        case .bool(let value): out.append(contentsOf: (value ? "true" : "false").utf8)
        case .number(let value): Self.writeNumber(value, to: &out)
        case .string(let value): JSONStringUnescaper.appendQuoted(value, to: &out)
        case .array(let values):
            out.append(UInt8(ascii: "["))
            for (index, value) in values.enumerated() {
                if index > 0 { out.append(UInt8(ascii: ",")) }
                value.write(to: &out)
            }
            out.append(UInt8(ascii: "]"))
        case .object(let members):
            out.append(UInt8(ascii: "{"))
            for (index, key) in members.keys.sorted().enumerated() {
                if index > 0 { out.append(UInt8(ascii: ",")) }
                JSONStringUnescaper.appendQuoted(key, to: &out)
                out.append(UInt8(ascii: ":"))
                members[key]!.write(to: &out)
            }
            out.append(UInt8(ascii: "}"))
        }
    }

    private static func writeNumber(_ value: Double, to out: inout [UInt8]) {
        guard value.isFinite else {
            out.append(contentsOf: "null".utf8)
            return
        }
        // Every integer a double holds below 2^63 is written as digits: a room id near 2^53
        // written as `9.0e+15` reads as a float in Python and as a lossy number elsewhere.
        if value == value.rounded(), abs(value) < 0x1p63 {
            out.append(contentsOf: String(Int64(value)).utf8)
        } else {
            out.append(contentsOf: "\(value)".utf8)
        }
    }
}

extension JSONValue {
    /// Milliseconds since 1970 for a date, as the wire writes times.
    public static func time(_ date: Date) -> JSONValue {
        .number((date.timeIntervalSince1970 * 1000).rounded())
    }

    /// A string, or `null` for `nil`.
    public static func optional(_ value: String?) -> JSONValue {
        value.map(JSONValue.string) ?? .null
    }
}
