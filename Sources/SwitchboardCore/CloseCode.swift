/// WebSocket close codes the daemon sends (RFC 6455 §7.4 and the private range).
public struct CloseCode: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    public let rawValue: UInt16
    public init(rawValue: UInt16) { self.rawValue = rawValue }

    /// 1000: the purpose of the connection is fulfilled (also: a handshake was refused).
    public static let normal = CloseCode(rawValue: 1000)
    /// 1001: the daemon is shutting down or draining.
    public static let goingAway = CloseCode(rawValue: 1001)
    /// 1002: the peer broke the protocol (an invalid close code, for one).
    public static let protocolError = CloseCode(rawValue: 1002)
    /// 1008: a policy was broken (too many bad frames, a consumer that does not read).
    public static let policyViolation = CloseCode(rawValue: 1008)
    /// 1009: a message was larger than `max_message_bytes`.
    public static let messageTooBig = CloseCode(rawValue: 1009)
    /// 1011: the server hit an unexpected condition.
    public static let internalError = CloseCode(rawValue: 1011)
    /// 1012: the service restarts: the node relaying this socket lost or changed its leading
    /// node (a cluster, ADR 0012); reconnect (through the balancer) and resume.
    public static let serviceRestart = CloseCode(rawValue: 1012)
    /// 1013: try again later (a capacity limit was reached).
    public static let tryAgainLater = CloseCode(rawValue: 1013)
    /// 4001: the call-protocol socket could not authenticate, or its token expired.
    public static let unauthenticated = CloseCode(rawValue: 4001)
    /// 4002: a resume from another socket took this connection over.
    public static let replaced = CloseCode(rawValue: 4002)
    /// 4003: the socket sent nothing, not even a ping, for the idle timeout.
    public static let idleTimeout = CloseCode(rawValue: 4003)

    public var description: String { String(rawValue) }
}
