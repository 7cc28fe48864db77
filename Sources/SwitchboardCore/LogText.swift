/// Text a client sent, made safe for a log line: control characters (line breaks, escapes,
/// NUL, DEL, C1) become `\u{…}`, backslashes are doubled, and anything past `limit` characters is
/// cut with an ellipsis. Everything a client controls goes through this before it is logged.
public enum LogText {
    public static func escape(_ text: some StringProtocol, limit: Int = 200) -> String {
        var result = ""
        var count = 0
        for scalar in text.unicodeScalars {
            if count == limit {
                result += "…"
                break
            }
            count += 1
            switch scalar.value {
            case 0x5C: result += "\\\\"
            case 0x00..<0x20, 0x7F..<0xA0, 0x2028, 0x2029:
                result += "\\u{\(String(scalar.value, radix: 16))}"
            default:
                result.unicodeScalars.append(scalar)
            }
        }
        return result
    }
}
