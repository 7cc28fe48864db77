/// Decodes and encodes the body of JSON string literals.
public enum JSONStringUnescaper {
    /// Decodes an already validated escaped string body (no surrounding quotes).
    /// Lone surrogates become U+FFFD, as JavaScript's `JSON.parse` keeps them unpaired.
    public static func unescape(_ body: ArraySlice<UInt8>) -> String {
        var out: [UInt8] = []
        out.reserveCapacity(body.count)
        var index = body.startIndex
        var pendingHigh: UInt32?
        while index < body.endIndex {
            let byte = body[index]
            guard byte == UInt8(ascii: "\\"), index + 1 < body.endIndex else {
                flush(&pendingHigh, into: &out)
                out.append(byte)
                index += 1
                continue
            }
            let escaped = body[index + 1]
            index += 2
            if escaped == UInt8(ascii: "u"), index + 4 <= body.endIndex {
                let unit = hexValue(body[index..<(index + 4)])
                index += 4
                appendUnit(unit, pending: &pendingHigh, into: &out)
                continue
            }
            flush(&pendingHigh, into: &out)
            out.append(simpleEscape(escaped))
        }
        flush(&pendingHigh, into: &out)
        return String(decoding: out, as: UTF8.self)
    }

    /// Appends `string` as a quoted JSON string literal to `out`.
    public static func appendQuoted(_ string: String, to out: inout [UInt8]) {
        out.append(UInt8(ascii: "\""))
        for byte in string.utf8 {
            switch byte {
            case UInt8(ascii: "\""): out.append(contentsOf: [0x5C, 0x22])
            case UInt8(ascii: "\\"): out.append(contentsOf: [0x5C, 0x5C])
            case 0x0A: out.append(contentsOf: [0x5C, UInt8(ascii: "n")])
            case 0x0D: out.append(contentsOf: [0x5C, UInt8(ascii: "r")])
            case 0x09: out.append(contentsOf: [0x5C, UInt8(ascii: "t")])
            case 0..<0x20:
                let hex: [UInt8] = Array("0123456789abcdef".utf8)
                out.append(contentsOf: [0x5C, UInt8(ascii: "u"), 0x30, 0x30, hex[Int(byte >> 4)], hex[Int(byte & 0xF)]])
            default: out.append(byte)
            }
        }
        out.append(UInt8(ascii: "\""))
    }

    private static func appendUnit(_ unit: UInt32, pending: inout UInt32?, into out: inout [UInt8]) {
        if (0xD800...0xDBFF).contains(unit) {
            flush(&pending, into: &out)
            pending = unit
            return
        }
        if (0xDC00...0xDFFF).contains(unit), let high = pending {
            pending = nil
            appendScalar(0x10000 + ((high - 0xD800) << 10) + (unit - 0xDC00), into: &out)
            return
        }
        flush(&pending, into: &out)
        appendScalar(unit, into: &out)
    }

    private static func flush(_ pending: inout UInt32?, into out: inout [UInt8]) {
        if pending != nil {
            appendScalar(0xFFFD, into: &out)
            pending = nil
        }
    }

    private static func appendScalar(_ value: UInt32, into out: inout [UInt8]) {
        let scalar = Unicode.Scalar(value) ?? "\u{FFFD}"
        out.append(contentsOf: Array(String(Character(scalar)).utf8))
    }

    private static func simpleEscape(_ byte: UInt8) -> UInt8 {
        switch byte {
        case UInt8(ascii: "b"): 0x08
        case UInt8(ascii: "f"): 0x0C
        case UInt8(ascii: "n"): 0x0A
        case UInt8(ascii: "r"): 0x0D
        case UInt8(ascii: "t"): 0x09
        default: byte
        }
    }

    private static func hexValue(_ digits: ArraySlice<UInt8>) -> UInt32 {
        digits.reduce(0) { value, digit in
            let nibble: UInt32 =
                switch digit {
                case UInt8(ascii: "0")...UInt8(ascii: "9"): UInt32(digit - UInt8(ascii: "0"))
                case UInt8(ascii: "a")...UInt8(ascii: "f"): UInt32(digit - UInt8(ascii: "a") + 10)
                default: UInt32(digit - UInt8(ascii: "A") + 10)
                }
            return value << 4 | nibble
        }
    }
}
