/// Identifies one client connection (WebSocket or HTTP) for its whole life.
///
/// Transport threads allocate these; the high byte names the service thread that owns the
/// connection, so outbound commands can be routed without a shared table.
public struct ConnectionID: Hashable, Sendable, Comparable, CustomStringConvertible {
    /// The raw value: service-thread index in the top 8 bits, a per-thread counter below.
    public let rawValue: UInt64

    /// Wraps a raw value.
    public init(rawValue: UInt64) { self.rawValue = rawValue }

    /// Builds an id from a service-thread index and that thread's counter.
    public init(thread: Int, serial: UInt64) {
        precondition(thread >= 0 && thread < 256, "thread index out of range")
        self.rawValue = (UInt64(thread) << 56) | (serial & 0x00FF_FFFF_FFFF_FFFF)
    }

    /// The index of the service thread that owns this connection.
    public var thread: Int { Int(rawValue >> 56) }

    public var description: String { "c\(rawValue & 0x00FF_FFFF_FFFF_FFFF)@\(thread)" }

    public static func < (lhs: Self, rhs: Self) -> Bool { lhs.rawValue < rhs.rawValue }
}
