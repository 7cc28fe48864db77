/// Identifies one SFU (media server) in the location table.
public struct SFUID: Hashable, Sendable, Comparable, Codable, CustomStringConvertible {
    public let rawValue: String

    /// `nil` unless 1–64 characters of letters, digits, `.`, `_` or `-`, starting with a letter
    /// or digit (so `.` and `..` never name an SFU in a URL path).
    public init?(_ rawValue: String) {
        guard (1...64).contains(rawValue.utf8.count), rawValue.utf8.first?.isASCIIAlphanumeric == true,
            rawValue.utf8.allSatisfy({ $0.isASCIIAlphanumeric || $0 == UInt8(ascii: ".") || $0 == UInt8(ascii: "_") || $0 == UInt8(ascii: "-") })
        else { return nil }
        self.rawValue = rawValue
    }

    public var description: String { rawValue }
    public static func < (lhs: Self, rhs: Self) -> Bool { lhs.rawValue < rhs.rawValue }

    public init(from decoder: any Decoder) throws {
        let text = try decoder.singleValueContainer().decode(String.self)
        guard let id = SFUID(text) else {
            throw DecodingError.dataCorrupted(.init(codingPath: decoder.codingPath, debugDescription: "not an SFU id: \(text)"))
        }
        self = id
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(rawValue)
    }
}

extension UInt8 {
    var isASCIIAlphanumeric: Bool {
        (self >= 48 && self <= 57) || (self >= 65 && self <= 90) || (self >= 97 && self <= 122)
    }
}
