import Foundation

extension CallEngine {
    /// `call.accept`: the caller and the participants get `call.accepted`; the callee's other
    /// devices stop ringing (`accepted_elsewhere`).
    public mutating func accept(_ cid: CallCID, by actor: CallActor, now: Date, out: inout CallOutput) throws(SwitchboardError) -> JSONValue {
        let call = try live(cid)
        let member = try ringingMember(actor.user, of: call, answering: "accept")
        markAccepted(member, in: cid, by: actor.connection, now: now, out: &out)
        evaluateRing(cid, now: now, out: &out)
        return calls[cid]!.stateJSON
    }

    mutating func markAccepted(_ member: MemberRecord, in cid: CallCID, by connection: ClientConnectionID?, now: Date, out: inout CallOutput) {
        var next = member
        next.ringState = .accepted
        next.ringReason = nil
        next.ringDeadline = nil
        next.ringUpdatedAt = now
        setMember(next, in: cid, out: &out)
        var record = calls[cid]!.record
        record.autoCancelAt = nil
        saveRecord(record, out: &out)
        let call = calls[cid]!
        let data = JSONValue.object(["call": call.json, "user_id": .string(member.userID.rawValue)])
        log("call.accepted", call, .object(["user_id": .string(member.userID.rawValue)]), now: now, out: &out)
        out.notices.append(CallNotice(type: "call.accepted", cid: cid, data: data, connections: call.participantConnections, users: [call.record.createdBy]))
        out.notices.append(
            CallNotice(
                type: "call.ring_stopped", cid: cid, data: .object(["call": call.json, "reason": .string("accepted_elsewhere")]),
                users: [member.userID], except: connection))
        out.metrics.append(.ringOutcome("accepted", answeredAfter: member.ringUpdatedAt.map { .seconds(now.timeIntervalSince($0)) }))
    }

    /// `call.reject {reason}`. From the caller with reason `cancel`, it cancels the whole ring.
    public mutating func reject(
        _ cid: CallCID, reason: RejectReason, by actor: CallActor, now: Date, out: inout CallOutput
    ) throws(SwitchboardError) -> JSONValue {
        let call = try live(cid)
        if actor.user == call.record.createdBy {
            guard reason == .cancel, !call.ringingMembers.isEmpty else {
                throw SwitchboardError(.conflict, "the caller can only cancel a ring that is still going")
            }
            cancelRing(cid, now: now, out: &out)
            if calls[cid]!.record.isLive, !calls[cid]!.members.values.contains(where: { $0.ringState == .accepted }) {
                end(cid, reason: .cancelled, now: now, out: &out)
            }
            return calls[cid]!.stateJSON
        }
        var member = try ringingMember(actor.user, of: call, answering: "reject")
        let ringStarted = member.ringUpdatedAt
        member.ringState = .rejected
        member.ringReason = reason
        member.ringDeadline = nil
        member.ringUpdatedAt = now
        setMember(member, in: cid, out: &out)
        notifyRejected(member, in: cid, by: actor.connection, now: now, out: &out)
        out.metrics.append(.ringOutcome("rejected_\(reason.rawValue)", answeredAfter: ringStarted.map { .seconds(now.timeIntervalSince($0)) }))
        evaluateRing(cid, now: now, out: &out)
        return calls[cid]!.stateJSON
    }

    func ringingMember(_ user: UserID, of call: LiveCall, answering verb: String) throws(SwitchboardError) -> MemberRecord {
        guard let member = call.members[user] else { throw SwitchboardError(.notAMember, "\(user) is not a member of \(call.cid)") }
        guard member.ringState == .ringing else {
            throw SwitchboardError(.conflict, "cannot \(verb): the ring for \(user) is \(member.ringState.rawValue)")
        }
        return member
    }

    /// `call.rejected` to the caller, the participants, and the callee's other devices.
    mutating func notifyRejected(_ member: MemberRecord, in cid: CallCID, by connection: ClientConnectionID?, now: Date, out: inout CallOutput) {
        let call = calls[cid]!
        let reason = JSONValue.optional(member.ringReason?.rawValue)
        log("call.rejected", call, .object(["user_id": .string(member.userID.rawValue), "reason": reason]), now: now, out: &out)
        let data = JSONValue.object(["call": call.json, "user_id": .string(member.userID.rawValue), "reason": reason])
        // A busy callee (connection nil) was never rung: only the caller side hears of it.
        let users: Set<UserID> = connection == nil ? [call.record.createdBy] : [call.record.createdBy, member.userID]
        out.notices.append(
            CallNotice(type: "call.rejected", cid: cid, data: data, connections: call.participantConnections, users: users, except: connection))
    }

    /// Stops every ring still going (`call.ring_stopped {reason: cancelled}`); those members
    /// are `rejected` with reason `cancel`.
    mutating func cancelRing(_ cid: CallCID, now: Date, out: inout CallOutput) {
        guard let call = calls[cid] else { return }
        for user in call.ringingMembers {
            var member = call.members[user]!
            member.ringState = .rejected
            member.ringReason = .cancel
            member.ringDeadline = nil
            member.ringUpdatedAt = now
            setMember(member, in: cid, out: &out)
            out.metrics.append(.ringOutcome("cancelled", answeredAfter: nil))
        }
        var record = calls[cid]!.record
        record.autoCancelAt = nil
        saveRecord(record, out: &out)
        if !call.ringingMembers.isEmpty {
            log("call.ring_stopped", calls[cid]!, .object(["reason": .string("cancelled")]), now: now, out: &out)
            out.notices.append(
                CallNotice(
                    type: "call.ring_stopped", cid: cid, data: .object(["call": calls[cid]!.json, "reason": .string("cancelled")]),
                    users: Set(call.ringingMembers)))
        }
    }

    /// A ringing member who did not answer in time becomes `missed`.
    mutating func markMissed(_ user: UserID, in cid: CallCID, now: Date, out: inout CallOutput) {
        guard var member = calls[cid]?.members[user], member.ringState == .ringing else { return }
        member.ringState = .missed
        member.ringDeadline = nil
        member.ringUpdatedAt = now
        setMember(member, in: cid, out: &out)
        let call = calls[cid]!
        log("call.missed", call, .object(["user_id": .string(user.rawValue)]), now: now, out: &out)
        out.notices.append(
            CallNotice(type: "call.ring_stopped", cid: cid, data: .object(["call": call.json, "reason": .string("timeout")]), users: [user]))
        out.metrics.append(.ringOutcome("missed", answeredAfter: nil))
    }

    /// Once nobody is ringing any more: if nobody accepted, the call ends (`all_rejected` when
    /// every callee rejected, else `no_answer` with `call.missed` to the caller); if somebody
    /// did but nobody has joined, the empty timer takes over.
    mutating func evaluateRing(_ cid: CallCID, now: Date, out: inout CallOutput) {
        guard let call = calls[cid], call.record.isLive, call.record.rung, call.ringingMembers.isEmpty else { return }
        let callees = call.members.values.filter { $0.userID != call.record.createdBy && $0.ringState != .none }
        guard !callees.contains(where: { $0.ringState == .accepted }) else {
            armEmptyTimer(cid, now: now, out: &out)
            return
        }
        if callees.allSatisfy({ $0.ringState == .rejected }) {
            end(cid, reason: .allRejected, now: now, out: &out)
        } else {
            out.notices.append(CallNotice(type: "call.missed", cid: cid, data: .object(["call": call.json]), users: [call.record.createdBy]))
            end(cid, reason: .noAnswer, now: now, out: &out)
        }
    }
}
