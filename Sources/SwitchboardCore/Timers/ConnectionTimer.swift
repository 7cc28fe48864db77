/// The deadlines of one connection, whatever it turns out to be, as a small state machine the
/// transport drives: every connection has exactly one deadline at any time, kept in a
/// ``TimerWheel``, and the transport asks ``fire(now:)`` what to do when it comes due.
///
/// Reading a frame costs nothing here: the transport sets ``heard`` and the next visit moves the
/// deadline. A WebSocket is pinged only after a whole interval without a frame from it, and
/// closed when a further interval passes without one (pongs count).
public struct ConnectionTimer: Sendable, Equatable {
    /// What the connection is doing, and so which deadline applies.
    public enum Phase: Sendable, Equatable {
        /// Accepted; no complete request or upgrade yet (handshake deadline).
        case handshake
        /// An HTTP request is being read (handshake deadline from its start).
        case readingRequest
        /// An HTTP request was handed to the application; its response is awaited.
        case awaitingResponse
        /// Keep-alive between HTTP requests (handshake deadline from the last response).
        case idle
        /// An open WebSocket; `awaitingPong` once pinged.
        case webSocket(awaitingPong: Bool)
        /// Closing: the close frame or response has until the deadline to go out.
        case closing
    }

    /// What the transport does when a deadline fires.
    public enum Action: Sendable, Equatable {
        /// Nothing: the deadline moved (the connection was heard from).
        case none
        /// Send a WebSocket ping.
        case ping
        /// Drop the connection at once; the reason is for logs.
        case close(String)
    }

    /// The deadlines that apply, from configuration.
    public struct Timeouts: Sendable, Equatable {
        /// From accept to a complete request or upgrade; also a request's whole body, and
        /// keep-alive idle time.
        public var handshake: Duration
        /// Silence before a ping; as much again with no answer closes the socket.
        public var ping: Duration
        /// How long the application may take to answer a request it was handed.
        public var response: Duration

        public init(handshake: Duration, ping: Duration, response: Duration? = nil) {
            self.handshake = handshake
            self.ping = ping
            self.response = response ?? max(handshake, .seconds(30))
        }
    }

    public private(set) var phase: Phase
    /// The one deadline in force; entries in the wheel for any other deadline are stale.
    public private(set) var deadline: MonotonicTime
    /// Set by the transport on every frame read from the socket (pongs too); cleared when the
    /// deadline is next visited.
    public var heard = false

    /// A connection accepted at `now`.
    public init(acceptedAt now: MonotonicTime, timeouts: Timeouts) {
        phase = .handshake
        deadline = now.advanced(by: timeouts.handshake)
    }

    /// Whether the connection has not yet finished a request or upgrade (it counts against the
    /// per-address cap on pending handshakes).
    public var isPending: Bool { phase == .handshake }

    /// An HTTP request's headers arrived; its body must follow within the handshake deadline.
    public mutating func requestStarted(now: MonotonicTime, timeouts: Timeouts) {
        phase = .readingRequest
        deadline = now.advanced(by: timeouts.handshake)
    }

    /// The request was handed to the application.
    public mutating func requestDispatched(now: MonotonicTime, timeouts: Timeouts) {
        phase = .awaitingResponse
        deadline = now.advanced(by: timeouts.response)
    }

    /// The response went out and the connection stays open for another request.
    public mutating func responded(now: MonotonicTime, timeouts: Timeouts) {
        phase = .idle
        deadline = now.advanced(by: timeouts.handshake)
    }

    /// The WebSocket upgrade completed. `spread` (any number, e.g. the connection's serial)
    /// places the first ping between half an interval and a whole one from now, so a crowd that
    /// connected together is not pinged together.
    public mutating func established(now: MonotonicTime, timeouts: Timeouts, spread: UInt64) {
        phase = .webSocket(awaitingPong: false)
        let interval = timeouts.ping.nanoseconds
        let offset = interval / 2 + Int64(spread % 1024) * (interval / 2) / 1024
        deadline = now.advanced(by: .nanoseconds(offset))
        heard = false
    }

    /// The connection is closing; it is dropped if still open after `grace`.
    public mutating func closing(now: MonotonicTime, grace: Duration) {
        phase = .closing
        deadline = now.advanced(by: grace)
    }

    /// The deadline came due at `now`: what to do, and the next deadline (if the connection
    /// lives on, ``deadline`` is later than `now`).
    public mutating func fire(now: MonotonicTime, timeouts: Timeouts) -> Action {
        switch phase {
        case .handshake:
            return .close("handshake timeout")
        case .readingRequest:
            return .close("request not complete in time")
        case .awaitingResponse:
            return .close("no response in time")
        case .idle:
            return .close("keep-alive idle timeout")
        case .closing:
            return .close("close timeout")
        case .webSocket(let awaitingPong):
            deadline = now.advanced(by: timeouts.ping)
            if heard {
                heard = false
                phase = .webSocket(awaitingPong: false)
                return .none
            }
            if !awaitingPong {
                phase = .webSocket(awaitingPong: true)
                return .ping
            }
            return .close("ping timeout")
        }
    }
}
