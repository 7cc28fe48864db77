/// Running counters of the relay, read by the host for metrics and `/v1/stats`.
public struct RelayStats: Sendable, Equatable {
    /// Messages forwarded to a connected destination, by type.
    public var relayed: [PeerJSMessageType: Int] = [:]
    /// Messages queued for an offline destination.
    public var queued = 0
    /// Queued messages delivered when their destination connected.
    public var deliveredFromQueue = 0
    /// Queued messages dropped because they expired.
    public var expired = 0
    /// Messages refused because a queue bound was reached.
    public var overflowed = 0
    /// EXPIRE notices sent to senders.
    public var expireNotices = 0
    /// Frames that were not a JSON object.
    public var malformed = 0
    /// JSON objects with no handled type.
    public var ignored = 0
    /// Messages dropped (no dst, or LEAVE/EXPIRE to an offline peer).
    public var dropped = 0
    /// Handshakes refused, by reason.
    public var refused: [String: Int] = [:]
    /// Sockets closed for silence past `alive_timeout`.
    public var timedOut = 0
    /// Messages dropped because their socket sent faster than `peerjs.messages.rate`.
    public var rateLimited = 0

    public init() {}
}
