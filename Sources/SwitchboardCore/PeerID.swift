/// A PeerJS peer id: the name a client registers under and others address messages to.
///
/// PeerJS ids are client-chosen strings (usually a UUID from `GET /<key>/id`). The server
/// compares them byte for byte and never interprets them.
public struct PeerID: Hashable, Sendable, Comparable, CustomStringConvertible {
    /// The id as the client sent it (after URL decoding).
    public let rawValue: String

    /// The largest id accepted, in UTF-8 bytes.
    public static let maximumLength = 256

    /// Wraps a raw id; `nil` when it is empty or longer than ``maximumLength``.
    public init?(_ rawValue: String) {
        guard !rawValue.isEmpty, rawValue.utf8.count <= Self.maximumLength else { return nil }
        self.rawValue = rawValue
    }

    public var description: String { rawValue }

    // Byte for byte, as documented: Swift's String equality is canonical equivalence, under
    // which the NFC and NFD spellings of one name would be the same id.
    public static func == (lhs: Self, rhs: Self) -> Bool { lhs.rawValue.utf8.elementsEqual(rhs.rawValue.utf8) }

    public func hash(into hasher: inout Hasher) {
        for byte in rawValue.utf8 { hasher.combine(byte) }
    }

    public static func < (lhs: Self, rhs: Self) -> Bool { lhs.rawValue.utf8.lexicographicallyPrecedes(rhs.rawValue.utf8) }
}
