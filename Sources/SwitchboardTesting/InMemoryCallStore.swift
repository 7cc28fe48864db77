import Foundation
import SwitchboardCore

/// The in-memory twin of the SQLite call store: the same orderings, filters, cursor paging and
/// all-or-nothing ``apply(_:)``, with dictionaries behind a lock. It can be told to fail.
///
/// Its cursors are opaque like the SQLite store's, but not interchangeable with them.
public final class InMemoryCallStore: CallStore, @unchecked Sendable {
    private let lock = NSLock()
    private var calls: [CallCID: CallRecord] = [:]
    private var members: [CallCID: [UserID: MemberRecord]] = [:]
    private var sessions: [SessionID: SessionRecord] = [:]
    private var events: [CallCID: [CallEventRecord]] = [:]
    private var connections: [ClientConnectionID: ConnectionRecord] = [:]
    private var placements: [CallCID: PlacementRecord] = [:]
    private var failNext = false
    private var failAll = false
    private var applied: [[CallMutation]] = []

    public init() {}

    /// When set, the next ``apply(_:)`` throws `unavailable` and changes nothing; then it clears.
    public var failNextApply: Bool {
        get { lock.withLock { failNext } }
        set { lock.withLock { failNext = newValue } }
    }

    /// While set, every ``apply(_:)`` throws `unavailable` and changes nothing.
    public var failAllApplies: Bool {
        get { lock.withLock { failAll } }
        set { lock.withLock { failAll = newValue } }
    }

    /// Number of ``apply(_:)`` transactions committed (failed ones are not counted).
    public var applyCount: Int { lock.withLock { applied.count } }

    /// Every committed batch, oldest first.
    public var appliedBatches: [[CallMutation]] { lock.withLock { applied } }

    public func apply(_ mutations: [CallMutation]) throws {
        try lock.withLock {
            if failNext || failAll {
                failNext = false
                throw SwitchboardError(.unavailable, "store failure injected")
            }
            try CallMutation.validate(mutations)
            for mutation in mutations { commit(mutation) }
            applied.append(mutations)
        }
    }

    private func commit(_ mutation: CallMutation) {
        switch mutation {
        case .saveCall(let call): calls[call.cid] = call
        case .saveMember(let member): members[member.cid, default: [:]][member.userID] = member
        case .saveSession(let session): sessions[session.sessionID] = session
        case .appendEvent(let event): events[event.cid, default: []].append(event)
        case .saveConnection(let connection): connections[connection.id] = connection
        case .deleteConnection(let id): connections[id] = nil
        case .savePlacement(let placement): CallCID(cid: placement.callID).map { placements[$0] = placement }
        case .deletePlacement(let cid): placements[cid] = nil
        }
    }

    public func loadLiveState() throws -> CallStateSnapshot {
        lock.withLock {
            let live = calls.values.filter(\.isLive).sorted { $0.cid < $1.cid }
            return CallStateSnapshot(
                calls: live,
                members: live.flatMap { sortedMembers($0.cid) },
                sessions: sessions.values.filter(\.isActive).sorted(by: Self.joinOrder),
                connections: connections.values.sorted { $0.id < $1.id })
        }
    }

    /// Committed placements, by call (the SQLite store keeps them in `call_placement`).
    public var committedPlacements: [CallCID: PlacementRecord] { lock.withLock { placements } }

    public func loadCall(_ cid: CallCID) throws -> (call: CallRecord, members: [MemberRecord])? {
        lock.withLock { calls[cid].map { ($0, sortedMembers(cid)) } }
    }

    public func callDetail(_ cid: CallCID, eventLimit: Int) throws -> CallDetail? {
        lock.withLock {
            guard let call = calls[cid] else { return nil }
            return CallDetail(
                call: call, members: sortedMembers(cid),
                sessions: sessions.values.filter { $0.cid == cid }.sorted(by: Self.joinOrder),
                events: Array(events[cid, default: []].suffix(max(0, eventLimit))))
        }
    }

    public func listCalls(_ query: CallQuery) throws -> CallPage {
        let after = try query.cursor.map(Self.decodeCursor)
        let limit = query.limit.clamped(to: CallQuery.limits)
        return lock.withLock {
            let matching = calls.values.filter { matches($0, query) }.sorted(by: Self.newestFirst)
            let rest = after.map { after in matching.filter { Self.newestFirst(after, $0) } } ?? matching
            let page = Array(rest.prefix(limit))
            let next = rest.count > limit ? page.last.map(Self.cursor) : nil
            return CallPage(calls: page, next: next)
        }
    }

    private func matches(_ call: CallRecord, _ query: CallQuery) -> Bool {
        switch query.state {
        case .live?: if !call.isLive { return false }
        case .ended?: if call.isLive { return false }
        case nil: break
        }
        if let type = query.type, call.cid.type != type { return false }
        if let member = query.member, members[call.cid]?[member] == nil { return false }
        if let from = query.createdFrom, call.createdAt < from { return false }
        if let before = query.createdBefore, call.createdAt >= before { return false }
        return true
    }

    private func sortedMembers(_ cid: CallCID) -> [MemberRecord] {
        (members[cid] ?? [:]).values.sorted { ($0.addedAt, $0.userID) < ($1.addedAt, $1.userID) }
    }

    private static func joinOrder(_ lhs: SessionRecord, _ rhs: SessionRecord) -> Bool {
        (lhs.joinedAt, lhs.sessionID) < (rhs.joinedAt, rhs.sessionID)
    }

    private static func newestFirst(_ lhs: CallRecord, _ rhs: CallRecord) -> Bool {
        (lhs.createdAt, lhs.cid) > (rhs.createdAt, rhs.cid)
    }

    // MARK: - Cursors

    private static func cursor(_ call: CallRecord) -> String {
        // `Double.description` reads back to the same value, so the cursor date is exact.
        Data("\(call.createdAt.timeIntervalSince1970)|\(call.cid.cid)".utf8).base64EncodedString()
    }

    /// A stand-in for the last call of the previous page, compared by (created_at, cid) only.
    private static func decodeCursor(_ text: String) throws -> CallRecord {
        guard let data = Data(base64Encoded: text), let decoded = String(data: data, encoding: .utf8) else {
            throw SwitchboardError(.invalidRequest, "invalid cursor")
        }
        let parts = decoded.split(separator: "|", omittingEmptySubsequences: false).map(String.init)
        guard parts.count == 2, let seconds = Double(parts[0]), seconds.isFinite, let cid = CallCID(cid: parts[1]),
            let nobody = UserID("cursor")
        else { throw SwitchboardError(.invalidRequest, "invalid cursor") }
        return CallRecord(cid: cid, createdBy: nobody, createdAt: Date(timeIntervalSince1970: seconds))
    }
}
