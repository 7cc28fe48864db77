/// A call's address: its type and id. The cid `type:id` is how clients, the store and the
/// admin API name it.
public struct CallCID: Hashable, Sendable, Comparable, CustomStringConvertible, Codable {
    /// The call type, a key of the configured call types (`default`, `ringing`).
    public let type: String
    /// The call id, chosen by the client that creates the call.
    public let id: String

    /// The largest type or id accepted, in bytes.
    public static let maximumPartLength = 64

    /// Validates both parts: 1–64 bytes of `A–Z a–z 0–9 _ -`; `nil` otherwise.
    public init?(type: String, id: String) {
        guard Self.isValidPart(type), Self.isValidPart(id) else { return nil }
        self.type = type
        self.id = id
    }

    /// Parses `type:id`; `nil` when it is not two valid parts.
    public init?(cid: String) {
        let parts = cid.split(separator: ":", maxSplits: 1, omittingEmptySubsequences: false)
        guard parts.count == 2 else { return nil }
        self.init(type: String(parts[0]), id: String(parts[1]))
    }

    /// `type:id`.
    public var cid: String { type + ":" + id }
    public var description: String { cid }

    public static func < (lhs: Self, rhs: Self) -> Bool { lhs.cid < rhs.cid }

    /// The rule of a cid part, also the rule of a webhook endpoint name: 1–64 bytes of
    /// `A–Z a–z 0–9 _ -`.
    public static func isValidPart(_ part: String) -> Bool {
        let bytes = part.utf8
        guard !bytes.isEmpty, bytes.count <= maximumPartLength else { return false }
        return bytes.allSatisfy { byte in
            (byte >= 0x30 && byte <= 0x39) || (byte >= 0x41 && byte <= 0x5A) || (byte >= 0x61 && byte <= 0x7A) || byte == 0x5F
                || byte == 0x2D
        }
    }
}

/// A user, as named by the `user_id` (or `sub`) claim of a verified token.
public struct UserID: Hashable, Sendable, Comparable, CustomStringConvertible, Codable {
    public let rawValue: String

    /// The largest user id accepted, in bytes.
    public static let maximumLength = 128

    /// `nil` when empty, too long, or holding control characters.
    public init?(_ rawValue: String) {
        guard !rawValue.isEmpty, rawValue.utf8.count <= Self.maximumLength,
            !rawValue.unicodeScalars.contains(where: { $0.value < 0x20 || $0.value == 0x7F })
        else { return nil }
        self.rawValue = rawValue
    }

    public init(from decoder: any Decoder) throws {
        let raw = try decoder.singleValueContainer().decode(String.self)
        guard let id = UserID(raw) else {
            throw DecodingError.dataCorrupted(.init(codingPath: decoder.codingPath, debugDescription: "invalid user id"))
        }
        self = id
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(rawValue)
    }

    public var description: String { rawValue }
    public static func < (lhs: Self, rhs: Self) -> Bool { lhs.rawValue < rhs.rawValue }
}

/// One participant session: a single join of a call by one client connection.
public struct SessionID: Hashable, Sendable, Comparable, CustomStringConvertible {
    public let rawValue: String
    public init(_ rawValue: String) { self.rawValue = rawValue }
    public var description: String { rawValue }
    public static func < (lhs: Self, rhs: Self) -> Bool { lhs.rawValue < rhs.rawValue }

    /// The one rule for a session id a client or an operator sends (the call protocol and the
    /// admin API alike): the daemon makes them as UUIDs, so anything else names no session.
    public static let rule = "1–64 characters of A–Z a–z 0–9 _ -"

    /// A session id sent from outside, or `nil` when it breaks ``rule``.
    public init?(sent text: String) {
        guard CallCID.isValidPart(text) else { return nil }  // the rule of a call's type and id
        self.rawValue = text
    }
}

/// A call-protocol connection as the client sees it (`connection_id` in `connection.ok`).
/// It outlives a socket: a resumed socket keeps the same client connection.
public struct ClientConnectionID: Hashable, Sendable, Comparable, CustomStringConvertible {
    public let rawValue: String
    public init(_ rawValue: String) { self.rawValue = rawValue }
    public var description: String { rawValue }
    public static func < (lhs: Self, rhs: Self) -> Bool { lhs.rawValue < rhs.rawValue }
}
