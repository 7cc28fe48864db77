import Foundation

extension CallEngine {
    /// Fires every deadline at or before `now`: incoming timeouts (`missed`), auto-cancel
    /// (`no_answer`), empty calls (`empty`); evicts calls that ended a while ago.
    public mutating func tick(now: Date, out: inout CallOutput) {
        for cid in timedCalls.sorted() {
            guard let call = calls[cid] else { continue }
            guard call.record.isLive else {
                if let ended = call.record.endedAt, now.timeIntervalSince(ended) > Self.endedRetention {
                    calls[cid] = nil
                    endedCount -= 1
                    timedCalls.remove(cid)
                }
                continue
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
        for cid in timedCalls {
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
