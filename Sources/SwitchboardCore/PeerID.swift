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

    public static func < (lhs: Self, rhs: Self) -> Bool { lhs.rawValue < rhs.rawValue }
}
