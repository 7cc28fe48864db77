import Foundation

/// Dates as the store writes them: `yyyy-MM-dd HH:mm:ss.SSS` in UTC, the text GRDB writes and
/// reads for a `Date`, formatted here with integer arithmetic instead of a `DateFormatter` (ICU
/// cost a measurable share of every commit). `StoredTimeTests` holds it to GRDB's own text.
enum StoredTime {
    /// The stored text of `date`, to the nearest millisecond.
    static func text(_ date: Date) -> String {
        let milliseconds = Int64((date.timeIntervalSince1970 * 1000).rounded())
        let (days, inDay) = milliseconds.quotientAndRemainder(dividingBy: 86_400_000)
        let (day, dayMilliseconds) = inDay < 0 ? (days - 1, inDay + 86_400_000) : (days, inDay)
        let (year, month, dayOfMonth) = civil(fromDays: day)
        let seconds = dayMilliseconds / 1000
        var bytes: [UInt8] = []
        bytes.reserveCapacity(23)
        append(year, width: 4, to: &bytes)
        bytes.append(UInt8(ascii: "-"))
        append(month, width: 2, to: &bytes)
        bytes.append(UInt8(ascii: "-"))
        append(dayOfMonth, width: 2, to: &bytes)
        bytes.append(UInt8(ascii: " "))
        append(seconds / 3600, width: 2, to: &bytes)
        bytes.append(UInt8(ascii: ":"))
        append(seconds / 60 % 60, width: 2, to: &bytes)
        bytes.append(UInt8(ascii: ":"))
        append(seconds % 60, width: 2, to: &bytes)
        bytes.append(UInt8(ascii: "."))
        append(dayMilliseconds % 1000, width: 3, to: &bytes)
        return String(decoding: bytes, as: UTF8.self)
    }

    /// The stored text of an optional date (`nil` stays `NULL`).
    static func text(_ date: Date?) -> String? {
        date.map(text)
    }

    /// Year, month and day of the proleptic Gregorian calendar, `days` after 1970-01-01
    /// (Howard Hinnant's `civil_from_days`).
    private static func civil(fromDays days: Int64) -> (Int64, Int64, Int64) {
        let z = days + 719_468
        let era = (z >= 0 ? z : z - 146_096) / 146_097
        let dayOfEra = z - era * 146_097
        let yearOfEra = (dayOfEra - dayOfEra / 1460 + dayOfEra / 36_524 - dayOfEra / 146_096) / 365
        let dayOfYear = dayOfEra - (365 * yearOfEra + yearOfEra / 4 - yearOfEra / 100)
        let monthIndex = (5 * dayOfYear + 2) / 153
        let day = dayOfYear - (153 * monthIndex + 2) / 5 + 1
        let month = monthIndex < 10 ? monthIndex + 3 : monthIndex - 9
        return (yearOfEra + era * 400 + (month <= 2 ? 1 : 0), month, day)
    }

    private static func append(_ value: Int64, width: Int, to bytes: inout [UInt8]) {
        var digits = [UInt8](repeating: UInt8(ascii: "0"), count: width)
        var rest = value
        for index in stride(from: width - 1, through: 0, by: -1) {
            digits[index] = UInt8(ascii: "0") + UInt8(rest % 10)
            rest /= 10
        }
        bytes += digits
    }
}
