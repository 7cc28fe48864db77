import Foundation

/// One call's earliest deadline in ``CallEngine``'s timer heap; ordered by time, then cid.
struct CallDeadline: Comparable, Sendable {
    var date: Date
    var cid: CallCID

    static func < (lhs: Self, rhs: Self) -> Bool { (lhs.date, lhs.cid) < (rhs.date, rhs.cid) }
}

extension CallEngine {
    /// Fires every deadline at or before `now`: incoming timeouts (`missed`), auto-cancel
    /// (`no_answer`), empty calls (`empty`); evicts calls that ended a while ago. Visits only the
    /// calls whose earliest deadline has come (in cid order), so its cost does not grow with the
    /// number of calls waiting.
    public mutating func tick(now: Date, out: inout CallOutput) {
        pruneBuckets(now: now)
        var due: [CallCID] = []
        while let next = deadlineQueue.min, next.date <= now {
            deadlineQueue.removeMin()
            guard deadlines[next.cid] == next.date else { continue }  // stale
            deadlines[next.cid] = nil
            due.append(next.cid)
        }
        for cid in due.sorted() {
            fire(cid, now: now, out: &out)
            retime(cid)  // a deadline still due (the call could not end yet) comes up next tick
        }
    }

    /// Applies whatever of a call's deadlines has come.
    private mutating func fire(_ cid: CallCID, now: Date, out: inout CallOutput) {
        guard let call = calls[cid] else { return }
        guard call.record.isLive else {
            if let ended = call.record.endedAt, now.timeIntervalSince(ended) > Self.endedRetention {
                calls[cid] = nil
                endedCount -= 1
                releaseSpareCapacity()
            }
            return
        }
        for user in call.ringingMembers where (call.members[user]?.ringDeadline ?? .distantFuture) <= now {
            markMissed(user, in: cid, now: now, out: &out)
        }
        evaluateRing(cid, now: now, out: &out)
        if let cancelAt = calls[cid]?.record.autoCancelAt, cancelAt <= now, calls[cid]!.record.isLive {
            autoCancel(cid, now: now, out: &out)
        }
        if let emptyAt = calls[cid]?.record.emptyDeadline, emptyAt <= now, calls[cid]!.record.isLive,
            calls[cid]!.sessions.isEmpty, calls[cid]!.ringingMembers.isEmpty
        {
            end(cid, reason: .empty, now: now, out: &out)
        }
    }

    /// Gives back the storage a burst of calls and sessions left in the engine's tables.
    mutating func releaseSpareCapacity() {
        calls.releaseSpareCapacity()
        deadlines.releaseSpareCapacity()
        sessionCalls.releaseSpareCapacity()
        connectionSessions.releaseSpareCapacity()
        userSessions.releaseSpareCapacity()
        ringingCalls.releaseSpareCapacity()
    }

    /// When `call` next needs the tick: its earliest ring deadline, auto-cancel or empty
    /// deadline while live; its eviction once ended.
    static func earliestDeadline(of call: LiveCall) -> Date? {
        let record = call.record
        guard record.isLive else { return record.endedAt?.addingTimeInterval(endedRetention) }
        var earliest = [record.autoCancelAt, record.emptyDeadline].compactMap { $0 }.min()
        for member in call.members.values where member.ringState == .ringing {
            if let deadline = member.ringDeadline { earliest = min(earliest ?? deadline, deadline) }
        }
        return earliest
    }

    /// Nobody accepted in time: everyone still ringing is `missed`, the caller gets
    /// `call.missed`, and the call ends (`no_answer`).
    mutating func autoCancel(_ cid: CallCID, now: Date, out: inout CallOutput) {
        for user in calls[cid]!.ringingMembers { markMissed(user, in: cid, now: now, out: &out) }
        var record = calls[cid]!.record
        record.autoCancelAt = nil
        saveRecord(record, out: &out)
        evaluateRing(cid, now: now, out: &out)
    }

    /// The earliest deadline the engine is waiting for, so the host can sleep until then.
    public var nextDeadline: Date? {
        var earliest: Date?
        for cid in deadlines.keys {
            guard let call = calls[cid], call.record.isLive else { continue }
            let ringDeadlines = call.members.values.compactMap { $0.ringState == .ringing ? $0.ringDeadline : nil }
            for deadline in ringDeadlines + [call.record.autoCancelAt, call.record.emptyDeadline].compactMap({ $0 }) {
                earliest = min(earliest ?? deadline, deadline)
            }
        }
        return earliest
    }

    /// Rebuilds live calls, ring states and active sessions from the store at start.
    public mutating func restore(_ snapshot: CallStateSnapshot) {
        let members = Dictionary(grouping: snapshot.members, by: \.cid)
        let sessions = Dictionary(grouping: snapshot.sessions, by: \.cid)
        for record in snapshot.calls {
            guard let settings = configuration.types[record.cid.type] else { continue }
            var call = LiveCall(record: record, settings: settings, members: members[record.cid] ?? [], sessions: sessions[record.cid] ?? [])
            call.sessions = call.sessions.filter { $0.value.callSession == record.session && record.isLive }
            calls[record.cid] = call
            retime(record.cid)
            for session in call.sessions.values { index(session) }
            for member in call.members.values where member.ringState == .ringing {
                ringingCalls[member.userID, default: []].insert(record.cid)
            }
        }
    }
}
