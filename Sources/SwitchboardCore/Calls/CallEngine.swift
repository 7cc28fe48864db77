import Foundation
import HeapModule

/// The call and ring state machines: calls, members, ring states and participant sessions.
///
/// Pure: every operation takes the time and an id source as arguments, changes the engine's
/// state, and writes what to commit and whom to tell into a ``CallOutput``. The host commits
/// the mutations before it delivers anything, and puts back a copy of the engine taken before
/// the batch if the commit fails.
public struct CallEngine: Sendable {
    public let configuration: CallConfiguration
    /// Calls in memory: every live call, and ended ones until they are evicted.
    public internal(set) var calls: [CallCID: LiveCall] = [:]
    /// Where each active session is.
    var sessionCalls: [SessionID: CallCID] = [:]
    /// Active sessions per client connection.
    var connectionSessions: [ClientConnectionID: Set<SessionID>] = [:]
    /// Active sessions per user (busy detection).
    var userSessions: [UserID: Set<SessionID>] = [:]
    /// Calls in which each user is being rung.
    var ringingCalls: [UserID: Set<CallCID>] = [:]
    /// Rings each user may still receive.
    var ringBuckets: [UserID: TokenBucket] = [:]
    /// Calls each user may still create, and members each user may still invite.
    var createBuckets: [UserID: TokenBucket] = [:]
    var inviteBuckets: [UserID: TokenBucket] = [:]
    /// When full buckets were last dropped (they are re-made full on demand).
    var bucketsPrunedAt: Date?
    /// Each call's earliest deadline (a ring, auto-cancel, the empty timer, or eviction once
    /// ended): ``tick(now:out:)`` visits only calls whose deadline has come.
    var deadlines: [CallCID: Date] = [:]
    /// The same deadlines as a min-heap; an entry that no longer matches ``deadlines`` is stale
    /// and skipped when it comes up.
    var deadlineQueue = Heap<CallDeadline>()
    /// Ended calls still in memory.
    var endedCount = 0
    /// For one batch, what the store knows of users it may ring (``CallGateway/know(_:)``).
    public internal(set) var presence: [UserID: UserPresence] = [:]
    /// For one batch, calls run elsewhere ringing users whose devices connect (``CallGateway/know(rings:)``).
    public internal(set) var knownRings: [CallCID: LiveCall] = [:]

    /// Ended calls stay in memory this long for quick reopening, then are evicted.
    public static let endedRetention: TimeInterval = 60

    public init(configuration: CallConfiguration) {
        self.configuration = configuration
    }

    /// The call if it is in memory.
    public func call(_ cid: CallCID) -> LiveCall? { calls[cid] }

    /// The number of live calls.
    public var liveCallCount: Int { calls.count - endedCount }

    /// The number of active participant sessions.
    public var sessionCount: Int { sessionCalls.count }

    /// The active sessions a client connection holds.
    public func sessions(of connection: ClientConnectionID) -> Set<SessionID> {
        connectionSessions[connection] ?? []
    }

    /// The call a session is in, if it is active.
    public func callOf(session: SessionID) -> CallCID? { sessionCalls[session] }

    func settings(for type: String) throws(SwitchboardError) -> CallTypeSettings {
        guard let settings = configuration.types[type] else {
            throw SwitchboardError(.invalidRequest, "unknown call type \(type)")
        }
        return settings
    }

    func live(_ cid: CallCID) throws(SwitchboardError) -> LiveCall {
        guard let call = calls[cid] else { throw SwitchboardError(.callNotFound, "no call \(cid)") }
        guard call.record.isLive else { throw SwitchboardError(.callEnded, "call \(cid) has ended") }
        return call
    }

    /// Makes a call the host loaded from the store known to the engine (an ended call about
    /// to be reopened, or any call not in memory: one taken over from another node comes with
    /// its `sessions`, of which those of its current call session that have not left are kept).
    public mutating func adopt(_ record: CallRecord, members: [MemberRecord], sessions: [SessionRecord] = []) {
        guard calls[record.cid] == nil, let settings = configuration.types[record.cid.type] else { return }
        let active = record.isLive ? sessions.filter { $0.cid == record.cid && $0.callSession == record.session && $0.leftAt == nil } : []
        calls[record.cid] = LiveCall(record: record, settings: settings, members: members, sessions: active)
        for session in active { index(session) }
        if !record.isLive { endedCount += 1 }
        retime(record.cid)
        for member in members where member.ringState == .ringing && record.isLive {
            ringingCalls[member.userID, default: []].insert(record.cid)
        }
    }

    // MARK: - Index upkeep

    mutating func setMember(_ member: MemberRecord, in cid: CallCID, out: inout CallOutput) {
        calls[cid]?.members[member.userID] = member
        retime(cid)
        if member.ringState == .ringing {
            ringingCalls[member.userID, default: []].insert(cid)
        } else {
            ringingCalls[member.userID]?.remove(cid)
            if ringingCalls[member.userID]?.isEmpty == true { ringingCalls[member.userID] = nil }
        }
        out.mutations.append(.saveMember(member))
    }

    mutating func saveRecord(_ record: CallRecord, out: inout CallOutput) {
        if let before = calls[record.cid]?.record, before.isLive != record.isLive { endedCount += record.isLive ? -1 : 1 }
        calls[record.cid]?.record = record
        retime(record.cid)
        out.mutations.append(.saveCall(record))
    }

    /// Keeps ``deadlines`` and ``deadlineQueue`` in step with a call's deadlines.
    mutating func retime(_ cid: CallCID) {
        let due = calls[cid].flatMap(Self.earliestDeadline)
        guard due != deadlines[cid] else { return }
        deadlines[cid] = due
        guard let due else { return }
        deadlineQueue.insert(CallDeadline(date: due, cid: cid))
        if deadlineQueue.count > 2 * deadlines.count + 1024 {
            deadlineQueue = Heap(deadlines.map { CallDeadline(date: $0.value, cid: $0.key) })  // drop stale entries
        }
    }

    mutating func index(_ session: SessionRecord) {
        sessionCalls[session.sessionID] = session.cid
        connectionSessions[session.connection, default: []].insert(session.sessionID)
        userSessions[session.userID, default: []].insert(session.sessionID)
    }

    mutating func unindex(_ session: SessionRecord) {
        sessionCalls[session.sessionID] = nil
        connectionSessions[session.connection]?.remove(session.sessionID)
        if connectionSessions[session.connection]?.isEmpty == true { connectionSessions[session.connection] = nil }
        userSessions[session.userID]?.remove(session.sessionID)
        if userSessions[session.userID]?.isEmpty == true { userSessions[session.userID] = nil }
    }

    /// Appends an entry to the call's event log.
    func log(_ type: String, _ call: LiveCall, _ payload: JSONValue, now: Date, out: inout CallOutput) {
        out.mutations.append(.appendEvent(CallEventRecord(cid: call.cid, callSession: call.record.session, at: now, type: type, payload: payload)))
    }

    /// Whether `user` is in an active call other than `cid`: one of this engine's, or, as the
    /// store knew it before the batch, another node's.
    func isBusy(_ user: UserID, otherThan cid: CallCID) -> Bool {
        (userSessions[user] ?? []).contains { sessionCalls[$0] != cid } || (presence[user]?.calls.contains { $0 != cid } ?? false)
    }
}
