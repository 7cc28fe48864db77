/// Who the client is.
public struct UserInfo: Sendable, Equatable {
    public let id: String
    public let name: String?
    public init(id: String, name: String? = nil) {
        self.id = id
        self.name = name
    }
}

/// A signed user token. Its description is redacted, so it never reaches a log.
public struct UserToken: Sendable, Equatable, CustomStringConvertible, CustomDebugStringConvertible {
    public let rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }
    public var description: String { "UserToken(redacted)" }
    public var debugDescription: String { description }
}

/// How the client behaves (after the product documents' `VideoConfig`).
public struct ClientConfig: Sendable {
    /// Keep the socket open from ``SwitchboardClient/connect()`` on, to hear incoming calls
    /// (default); `false` opens it at the first call operation and closes it when no call is
    /// active any more.
    public var persistingSocketConnection: Bool
    /// Meeting mode: ``CallViewModel/startCall(callType:callId:members:ring:)`` joins at once;
    /// `false` is ringing mode (outgoing and incoming screens, accept and reject).
    public var joinCallInstantly: Bool
    /// How long a request waits for its answer (`timeout`).
    public var requestTimeout: Duration
    /// How often an idle socket sends `ping` (the server closes a silent one after 60 s).
    public var pingInterval: Duration
    /// Reconnect delays.
    public var backoff: Backoff
    /// How many times a failing token provider is asked before ``SwitchboardClientError/Code/tokenProviderFailed``.
    public var tokenProviderAttempts: Int
    /// How long a join retries `unavailable` / `rate_limited` answers.
    public var joinRetryWindow: Duration

    public init(
        persistingSocketConnection: Bool = true, joinCallInstantly: Bool = false, requestTimeout: Duration = .seconds(10),
        pingInterval: Duration = .seconds(25), backoff: Backoff = Backoff(), tokenProviderAttempts: Int = 5,
        joinRetryWindow: Duration = .seconds(2)
    ) {
        self.persistingSocketConnection = persistingSocketConnection
        self.joinCallInstantly = joinCallInstantly
        self.requestTimeout = requestTimeout
        self.pingInterval = pingInterval
        self.backoff = backoff
        self.tokenProviderAttempts = tokenProviderAttempts
        self.joinRetryWindow = joinRetryWindow
    }
}

/// The socket's state, as the app shows it.
public enum ConnectionState: Sendable, Equatable {
    /// No socket and none wanted (before `connect()`, after `disconnect()`, or idle without
    /// `persistingSocketConnection`).
    case disconnected
    /// Opening the first socket.
    case connecting
    /// Authenticated (`connection.ok`).
    case connected
    /// The socket dropped; reconnecting with backoff and resuming.
    case reconnecting
    /// Stopped for good: the token provider failed, or the token was refused.
    case failed(SwitchboardClientError)
}

/// What the client reports besides calls' own state.
public enum ClientEvent: Sendable {
    case connectionChanged(ConnectionState)
    /// `call.ring` for this user: the call is rung and waits for accept or reject.
    case incomingCall(CallID, from: String)
    /// Every event the server sent, in `seq` order, duplicates dropped.
    case event(ServerEvent)
}

/// Orders events by `seq` across resumes: duplicates (a replay of what was seen) are dropped;
/// a gap means events were lost and the calls' state must be fetched again.
public struct EventSequencer: Sendable, Equatable {
    public enum Verdict: Sendable, Equatable { case deliver, duplicate, gap }

    public private(set) var lastSeq: Int64 = 0

    public init() {}

    public mutating func accept(_ seq: Int64) -> Verdict {
        if seq <= lastSeq { return .duplicate }
        defer { lastSeq = seq }
        return seq == lastSeq + 1 ? .deliver : .gap
    }

    /// After `connection.ok`: whether the calls' state must be fetched again (a new connection
    /// where a resume was hoped for, or a replay the server cannot vouch for).
    public mutating func connected(_ info: ConnectionInfo, hadConnection: Bool) -> Bool {
        if !info.resumed {
            lastSeq = info.lastSeq
            return hadConnection
        }
        // The replayed events follow with seq > lastSeq; after a daemon restart seq jumps ahead,
        // which the incomplete replay already says.
        return !info.replayComplete
    }
}
