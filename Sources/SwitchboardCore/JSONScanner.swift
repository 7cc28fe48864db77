/// A strict, allocation-light JSON validator that also finds the byte ranges of top-level
/// object members.
///
/// The relay never rebuilds a payload: it validates the whole frame, reads `type` and `dst`,
/// and forwards the payload's bytes untouched. Grammar is RFC 8259; nesting is capped at
/// ``maximumDepth`` so hostile input cannot exhaust the stack.
public struct JSONScanner {
    /// Deepest nesting of arrays and objects accepted.
    public static let maximumDepth = 256

    /// Why a document was refused.
    public enum Failure: Error, Equatable, Sendable {
        case empty
        case notAnObject
        case syntax(offset: Int)
        case tooDeep
    }

    /// One member of the top-level object: the decoded key and the value's raw byte range.
    public struct Member: Sendable {
        public let key: String
        public let value: Range<Int>
    }

    private let bytes: [UInt8]
    private var index: Int

    private init(_ bytes: [UInt8]) {
        self.bytes = bytes
        self.index = 0
    }

    /// Validates `bytes` as one JSON object and returns its members in order (duplicates kept).
    public static func topLevelMembers(of bytes: [UInt8]) throws(Failure) -> [Member] {
        var scanner = JSONScanner(bytes)
        scanner.skipWhitespace()
        guard scanner.index < bytes.count else { throw .empty }
        guard bytes[scanner.index] == UInt8(ascii: "{") else {
            try scanner.skipValue(depth: 0)
            scanner.skipWhitespace()
            guard scanner.index == bytes.count else { throw .syntax(offset: scanner.index) }
            throw .notAnObject
        }
        let members = try scanner.objectMembers()
        scanner.skipWhitespace()
        guard scanner.index == bytes.count else { throw .syntax(offset: scanner.index) }
        return members
    }

    /// Validates `bytes` as exactly one JSON value of any kind.
    public static func validate(_ bytes: [UInt8]) throws(Failure) {
        var scanner = JSONScanner(bytes)
        scanner.skipWhitespace()
        guard scanner.index < bytes.count else { throw .empty }
        try scanner.skipValue(depth: 0)
        scanner.skipWhitespace()
        guard scanner.index == bytes.count else { throw .syntax(offset: scanner.index) }
    }

    /// Decodes the JSON string literal at `range` (quotes included); `nil` if it is not a string.
    public static func decodeString(_ bytes: [UInt8], _ range: Range<Int>) -> String? {
        guard range.count >= 2, bytes[range.lowerBound] == UInt8(ascii: "\"") else { return nil }
        let inner = (range.lowerBound + 1)..<(range.upperBound - 1)
        guard bytes[inner].contains(UInt8(ascii: "\\")) else {
            return String(decoding: bytes[inner], as: UTF8.self)
        }
        return JSONStringUnescaper.unescape(bytes[inner])
    }

    // MARK: - Grammar

    private mutating func objectMembers() throws(Failure) -> [Member] {
        index += 1  // {
        var members: [Member] = []
        skipWhitespace()
        if peek() == UInt8(ascii: "}") {
            index += 1
            return members
        }
        while true {
            skipWhitespace()
            guard peek() == UInt8(ascii: "\"") else { throw .syntax(offset: index) }
            let keyStart = index
            try skipString()
            let key = Self.decodeString(bytes, keyStart..<index) ?? ""
            skipWhitespace()
            guard peek() == UInt8(ascii: ":") else { throw .syntax(offset: index) }
            index += 1
            skipWhitespace()
            let valueStart = index
            try skipValue(depth: 1)
            members.append(Member(key: key, value: valueStart..<index))
            skipWhitespace()
            switch peek() {
            case UInt8(ascii: ","): index += 1
            case UInt8(ascii: "}"):
                index += 1
                return members
            default: throw .syntax(offset: index)
            }
        }
    }

    /// `depth` is the number of containers already open around this value.
    private mutating func skipValue(depth: Int) throws(Failure) {
        guard let byte = peek() else { throw .syntax(offset: index) }
        switch byte {
        case UInt8(ascii: "\""): try skipString()
        case UInt8(ascii: "{"): try skipContainer(close: UInt8(ascii: "}"), keyed: true, depth: depth)
        case UInt8(ascii: "["): try skipContainer(close: UInt8(ascii: "]"), keyed: false, depth: depth)
        case UInt8(ascii: "t"): try expectLiteral("true")
        case UInt8(ascii: "f"): try expectLiteral("false")
        case UInt8(ascii: "n"): try expectLiteral("null")
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): try skipNumber()
        default: throw .syntax(offset: index)
        }
    }

    private mutating func skipContainer(close: UInt8, keyed: Bool, depth: Int) throws(Failure) {
        // Opening this container makes `depth + 1` levels of nesting.
        guard depth < Self.maximumDepth else { throw .tooDeep }
        index += 1
        skipWhitespace()
        if peek() == close {
            index += 1
            return
        }
        while true {
            skipWhitespace()
            if keyed {
                guard peek() == UInt8(ascii: "\"") else { throw .syntax(offset: index) }
                try skipString()
                skipWhitespace()
                guard peek() == UInt8(ascii: ":") else { throw .syntax(offset: index) }
                index += 1
                skipWhitespace()
            }
            try skipValue(depth: depth + 1)
            skipWhitespace()
            guard let next = peek() else { throw .syntax(offset: index) }
            if next == UInt8(ascii: ",") {
                index += 1
            } else if next == close {
                index += 1
                return
            } else {
                throw .syntax(offset: index)
            }
        }
    }

    private mutating func skipString() throws(Failure) {
        index += 1  // opening quote
        while index < bytes.count {
            index = Self.endOfPlainRun(bytes, from: index)
            guard index < bytes.count else { break }
            let byte = bytes[index]
            if byte == UInt8(ascii: "\"") {
                index += 1
                return
            }
            if byte < 0x20 { throw .syntax(offset: index) }
            if byte == UInt8(ascii: "\\") {
                try skipEscape()
            } else {
                index += 1
            }
        }
        throw .syntax(offset: index)
    }

    /// The first index at or after `start` holding a quote, a backslash or a control byte (or
    /// the end): eight bytes a step, since a relayed payload is mostly long plain strings.
    static func endOfPlainRun(_ bytes: [UInt8], from start: Int) -> Int {
        var index = start
        let count = bytes.count
        let ones: UInt64 = 0x0101_0101_0101_0101
        let highs: UInt64 = 0x8080_8080_8080_8080
        while index + 8 <= count {
            // Little-endian: the lowest flagged byte is the first in the array.
            var word: UInt64 = 0
            for offset in 0..<8 { word |= UInt64(bytes[index + offset]) << (8 * offset) }
            // A byte is flagged when it is < 0x20, or equals '"' (0x22) or '\\' (0x5C).
            let control = (word &- ones &* 0x20) & ~word
            let quote = word ^ (ones &* 0x22)
            let backslash = word ^ (ones &* 0x5C)
            let flagged = (control | ((quote &- ones) & ~quote) | ((backslash &- ones) & ~backslash)) & highs
            if flagged != 0 { return index + flagged.trailingZeroBitCount / 8 }
            index += 8
        }
        while index < count {
            let byte = bytes[index]
            if byte < 0x20 || byte == 0x22 || byte == 0x5C { return index }
            index += 1
        }
        return count
    }

    private mutating func skipEscape() throws(Failure) {
        index += 1
        guard let escaped = peek() else { throw .syntax(offset: index) }
        switch escaped {
        case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"), UInt8(ascii: "b"),
            UInt8(ascii: "f"), UInt8(ascii: "n"), UInt8(ascii: "r"), UInt8(ascii: "t"):
            index += 1
        case UInt8(ascii: "u"):
            guard index + 4 < bytes.count else { throw .syntax(offset: index) }
            for offset in 1...4 where !bytes[index + offset].isHexDigit {
                throw .syntax(offset: index + offset)
            }
            index += 5
        default:
            throw .syntax(offset: index)
        }
    }

    private mutating func skipNumber() throws(Failure) {
        if peek() == UInt8(ascii: "-") { index += 1 }
        guard let first = peek(), first.isDigit else { throw .syntax(offset: index) }
        index += 1
        if first != UInt8(ascii: "0") { skipDigits() }
        if peek() == UInt8(ascii: ".") {
            index += 1
            guard peek()?.isDigit == true else { throw .syntax(offset: index) }
            skipDigits()
        }
        if peek() == UInt8(ascii: "e") || peek() == UInt8(ascii: "E") {
            index += 1
            if peek() == UInt8(ascii: "+") || peek() == UInt8(ascii: "-") { index += 1 }
            guard peek()?.isDigit == true else { throw .syntax(offset: index) }
            skipDigits()
        }
    }

    private mutating func skipDigits() {
        while let byte = peek(), byte.isDigit { index += 1 }
    }

    private mutating func expectLiteral(_ literal: StaticString) throws(Failure) {
        let count = literal.utf8CodeUnitCount
        guard index + count <= bytes.count else { throw .syntax(offset: index) }
        var matches = true
        literal.withUTF8Buffer { expected in
            for offset in 0..<count where bytes[index + offset] != expected[offset] {
                matches = false
            }
        }
        guard matches else { throw .syntax(offset: index) }
        index += count
    }

    private mutating func skipWhitespace() {
        while index < bytes.count {
            switch bytes[index] {
            case 0x20, 0x09, 0x0A, 0x0D: index += 1
            default: return
            }
        }
    }

    private func peek() -> UInt8? { index < bytes.count ? bytes[index] : nil }
}

extension UInt8 {
    fileprivate var isDigit: Bool { self >= UInt8(ascii: "0") && self <= UInt8(ascii: "9") }
    fileprivate var isHexDigit: Bool {
        isDigit || (self >= UInt8(ascii: "a") && self <= UInt8(ascii: "f"))
            || (self >= UInt8(ascii: "A") && self <= UInt8(ascii: "F"))
    }
}
