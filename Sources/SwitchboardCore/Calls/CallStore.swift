import Foundation

/// What the store holds for rebuilding the call layer at start: every live call with its
/// members, every session that has not left, and every resumable connection.
public struct CallStateSnapshot: Sendable, Equatable {
    public var calls: [CallRecord]
    public var members: [MemberRecord]
    public var sessions: [SessionRecord]
    public var connections: [ConnectionRecord]
    /// Every registered push device.
    public var devices: [DeviceRecord]

    public init(
        calls: [CallRecord] = [], members: [MemberRecord] = [], sessions: [SessionRecord] = [], connections: [ConnectionRecord] = [],
        devices: [DeviceRecord] = []
    ) {
        self.devices = devices
        self.calls = calls
        self.members = members
        self.sessions = sessions
        self.connections = connections
    }
}

/// A filter for call history (`GET /v1/calls`).
public struct CallQuery: Sendable, Equatable {
    public enum State: String, Sendable, Equatable { case live, ended }
    /// The page sizes every admin list takes, `GET /v1/calls` included: one rule.
    public static let limits = 1...1000
    /// The page size when a list is not given one.
    public static let defaultLimit = 100
    public var state: State?
    public var type: String?
    /// Calls this user is a member of.
    public var member: UserID?
    /// Calls created at or after / before this time.
    public var createdFrom: Date?
    public var createdBefore: Date?
    public var limit: Int
    /// The `next` cursor of the previous page.
    public var cursor: String?

    public init(
        state: State? = nil, type: String? = nil, member: UserID? = nil, createdFrom: Date? = nil, createdBefore: Date? = nil, limit: Int = 50,
        cursor: String? = nil
    ) {
        self.state = state
        self.type = type
        self.member = member
        self.createdFrom = createdFrom
        self.createdBefore = createdBefore
        self.limit = limit
        self.cursor = cursor
    }
}

/// One page of call history, newest first.
public struct CallPage: Sendable, Equatable {
    public var calls: [CallRecord]
    /// Pass as ``CallQuery/cursor`` for the next page; `nil` on the last.
    public var next: String?

    public init(calls: [CallRecord], next: String?) {
        self.calls = calls
        self.next = next
    }
}

/// Everything stored about one call.
public struct CallDetail: Sendable, Equatable {
    public var call: CallRecord
    public var members: [MemberRecord]
    /// Every session of every call session, oldest first.
    public var sessions: [SessionRecord]
    /// The most recent events, oldest first.
    public var events: [CallEventRecord]

    public init(call: CallRecord, members: [MemberRecord], sessions: [SessionRecord], events: [CallEventRecord]) {
        self.call = call
        self.members = members
        self.sessions = sessions
        self.events = events
    }
}

/// The port that keeps calls, members, ring states, sessions, the call event log and
/// resumable connections. ``apply(_:)`` is one transaction: all or nothing.
public protocol CallStore: Sendable {
    /// Commits a batch of mutations in one transaction.
    func apply(_ mutations: [CallMutation]) throws
    /// Everything needed to rebuild live state at start.
    func loadLiveState() throws -> CallStateSnapshot
    /// One call (live or ended) and its members; `nil` when the id was never used.
    func loadCall(_ cid: CallCID) throws -> (call: CallRecord, members: [MemberRecord])?
    /// Call history, newest first.
    func listCalls(_ query: CallQuery) throws -> CallPage
    /// A call with its members, sessions and its last `eventLimit` events.
    func callDetail(_ cid: CallCID, eventLimit: Int) throws -> CallDetail?
    /// The call's event of this type appended last, `nil` when it has none (or the call is
    /// unknown).
    func lastEvent(of cid: CallCID, type: String) throws -> CallEventRecord?
    /// What a ring needs to know of each of `users` (every one gets an entry); the rule is
    /// ``UserPresence/derive(_:from:)``, which the default answers with.
    func presence(of users: Set<UserID>) throws -> [UserID: UserPresence]
    /// On a store several daemons share (ConnectionHolding.swift): takes over the connection a
    /// resume token names; the connections no live node holds any more.
    func takeConnection(resumeToken: String, user: UserID) throws -> ConnectionTakeover?
    func lostConnections(_ ids: Set<ClientConnectionID>, after window: Duration) throws -> Set<ClientConnectionID>
}

extension Comparable {
    /// This value, moved into `range` when outside it.
    public func clamped(to range: ClosedRange<Self>) -> Self {
        Swift.min(Swift.max(self, range.lowerBound), range.upperBound)
    }
}
