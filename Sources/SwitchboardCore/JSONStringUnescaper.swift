/// Decodes and encodes the body of JSON string literals.
public enum JSONStringUnescaper {
    /// Decodes an already validated escaped string body (no surrounding quotes).
    /// Lone surrogates become U+FFFD, as JavaScript's `JSON.parse` keeps them unpaired.
    public static func unescape(_ body: ArraySlice<UInt8>) -> String {
        // Never longer than its escaped form: written in place, then cut to length.
        var out = [UInt8](repeating: 0, count: body.count)
        var written = 0
        var index = body.startIndex
        var pendingHigh: UInt32?
        while index < body.endIndex {
            let byte = body[index]
            guard byte == UInt8(ascii: "\\"), index + 1 < body.endIndex else {
                if pendingHigh != nil { flush(&pendingHigh, into: &out, at: &written) }
                out[written] = byte
                written += 1
                index += 1
                continue
            }
            let escaped = body[index + 1]
            index += 2
            if escaped == UInt8(ascii: "u"), index + 4 <= body.endIndex {
                let unit = hexValue(body[index..<(index + 4)])
                index += 4
                appendUnit(unit, pending: &pendingHigh, into: &out, at: &written)
                continue
            }
            if pendingHigh != nil { flush(&pendingHigh, into: &out, at: &written) }
            out[written] = simpleEscape(escaped)
            written += 1
        }
        flush(&pendingHigh, into: &out, at: &written)
        return String(decoding: out[0..<written], as: UTF8.self)
    }

    /// Appends `string` as a quoted JSON string literal to `out`.
    public static func appendQuoted(_ string: String, to out: inout [UInt8]) {
        var string = string
        string.withUTF8 { appendQuoted(utf8: $0, to: &out) }
    }

    /// Appends UTF-8 `bytes` as a quoted JSON string literal to `out`.
    public static func appendQuoted(utf8 bytes: some Collection<UInt8>, to out: inout [UInt8]) {
        // Measured first, then written in place (one growth of `out`, no append per byte).
        var length = 2
        for byte in bytes {
            switch byte {
            case UInt8(ascii: "\""), UInt8(ascii: "\\"), 0x0A, 0x0D, 0x09: length += 2
            case 0..<0x20: length += 6
            default: length += 1
            }
        }
        var at = out.count
        out.append(contentsOf: repeatElement(0, count: length))
        out[at] = UInt8(ascii: "\"")
        at += 1
        for byte in bytes {
            switch byte {
            case UInt8(ascii: "\""), UInt8(ascii: "\\"):
                out[at] = 0x5C
                out[at + 1] = byte
                at += 2
            case 0x0A, 0x0D, 0x09:
                out[at] = 0x5C
                out[at + 1] = byte == 0x0A ? UInt8(ascii: "n") : byte == 0x0D ? UInt8(ascii: "r") : UInt8(ascii: "t")
                at += 2
            case 0..<0x20:
                let hex = Self.hexDigits
                out[at] = 0x5C
                out[at + 1] = UInt8(ascii: "u")
                out[at + 2] = 0x30
                out[at + 3] = 0x30
                out[at + 4] = hex[Int(byte >> 4)]
                out[at + 5] = hex[Int(byte & 0xF)]
                at += 6
            default:
                out[at] = byte
                at += 1
            }
        }
        out[at] = UInt8(ascii: "\"")
    }

    private static let hexDigits: [UInt8] = Array("0123456789abcdef".utf8)

    private static func appendUnit(_ unit: UInt32, pending: inout UInt32?, into out: inout [UInt8], at written: inout Int) {
        if (0xD800...0xDBFF).contains(unit) {
            flush(&pending, into: &out, at: &written)
            pending = unit
            return
        }
        if (0xDC00...0xDFFF).contains(unit), let high = pending {
            pending = nil
            appendScalar(0x10000 + ((high - 0xD800) << 10) + (unit - 0xDC00), into: &out, at: &written)
            return
        }
        flush(&pending, into: &out, at: &written)
        appendScalar(unit, into: &out, at: &written)
    }

    private static func flush(_ pending: inout UInt32?, into out: inout [UInt8], at written: inout Int) {
        if pending != nil {
            appendScalar(0xFFFD, into: &out, at: &written)
            pending = nil
        }
    }

    /// Writes a scalar's UTF-8 at `written` (its escape took at least as many bytes: 6 for one
    /// `\uXXXX`, 12 for a pair).
    private static func appendScalar(_ value: UInt32, into out: inout [UInt8], at written: inout Int) {
        let scalar = Unicode.Scalar(value) ?? "\u{FFFD}"
        for byte in Character(scalar).utf8 {
            out[written] = byte
            written += 1
        }
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
