/// UUIDs of version 7 (RFC 9562): 48 bits of Unix time in milliseconds, then 74 random bits.
/// Ids made later sort after ids made earlier, so a B-tree keyed on them (the stored session
/// and connection ids) grows at its right edge instead of dirtying a page at a random place on
/// every insert (ADR 0010). The random bits keep them unguessable among ids of the same
/// millisecond; the time they carry is no secret (a session's join time is in its record).
public enum TimeOrderedID {
    /// The id for `milliseconds` since 1970 and the random bits of `random` (74 of them used):
    /// lowercase, in the 8-4-4-4-12 form.
    public static func make(milliseconds: UInt64, random: (high: UInt64, low: UInt64)) -> String {
        let time = milliseconds & 0xFFFF_FFFF_FFFF
        let high = time << 16 | 0x7000 | (random.high & 0x0FFF)
        let low = 0x8000_0000_0000_0000 | (random.low & 0x3FFF_FFFF_FFFF_FFFF)
        let hex = hexDigits(high, count: 16) + hexDigits(low, count: 16)
        var text = ""
        text.reserveCapacity(36)
        for (index, character) in hex.enumerated() {
            if index == 8 || index == 12 || index == 16 || index == 20 { text.append("-") }
            text.append(character)
        }
        return text
    }

    private static func hexDigits(_ value: UInt64, count: Int) -> String {
        let digits = String(value, radix: 16)
        return String(repeating: "0", count: count - digits.count) + digits
    }
}
