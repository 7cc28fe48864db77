import Foundation

extension CallEngine {
    /// `call.end`: by the initiator, or a token with role `admin`.
    public mutating func end(_ cid: CallCID, by actor: CallActor, now: Date, out: inout CallOutput) throws(SwitchboardError) -> JSONValue {
        let call = try live(cid)
        guard actor.isAdmin || actor.user == call.record.createdBy else {
            throw SwitchboardError(.forbidden, "only the initiator or an admin may end \(cid)")
        }
        end(cid, reason: .endedByUser, now: now, out: &out)
        return calls[cid]!.stateJSON
    }

    /// The admin API ends a call.
    public mutating func endByAdmin(_ cid: CallCID, now: Date, out: inout CallOutput) throws(SwitchboardError) -> JSONValue {
        _ = try live(cid)
        end(cid, reason: .admin, now: now, out: &out)
        return calls[cid]!.stateJSON
    }

    /// Ends a live call: stops its rings, closes its sessions, and sends `call.ended {reason}`
    /// to every participant, every device still ringing, and the initiator.
    mutating func end(_ cid: CallCID, reason: CallEndReason, now: Date, out: inout CallOutput) {
        guard let call = calls[cid], call.record.isLive else { return }
        let ringing = call.ringingMembers
        for user in ringing {
            var member = call.members[user]!
            member.ringState = reason == .noAnswer ? .missed : .rejected
            member.ringReason = reason == .noAnswer ? nil : .cancel
            member.ringDeadline = nil
            member.ringUpdatedAt = now
            setMember(member, in: cid, out: &out)
            out.metrics.append(.ringOutcome(reason == .noAnswer ? "missed" : "cancelled", answeredAfter: nil))
        }
        let audience = call.participantConnections
        for session in call.sessions.values.sorted(by: { $0.sessionID < $1.sessionID }) {
            var left = session
            left.leftAt = now
            left.leftReason = "call_ended"
            unindex(left)
            out.mutations.append(.saveSession(left))
            let payload = JSONValue.object([
                "session_id": .string(left.sessionID.rawValue), "user_id": .string(left.userID.rawValue), "reason": .string("call_ended"),
            ])
            log("call.participant_left", call, payload, now: now, out: &out)
        }
        if !call.sessions.isEmpty { logSessionEnded(call, reason: "call_ended", now: now, out: &out) }
        calls[cid]!.sessions = [:]
        calls[cid]!.dominant = DominantSpeaker()
        var record = calls[cid]!.record
        record.endedAt = now
        record.endedReason = reason
        record.autoCancelAt = nil
        record.emptyDeadline = nil
        saveRecord(record, out: &out)
        let ended = calls[cid]!
        log("call.ended", ended, .object(["reason": .string(reason.rawValue)]), now: now, out: &out)
        out.notices.append(
            CallNotice(
                type: "call.ended", cid: cid, data: .object(["call": ended.json, "reason": .string(reason.rawValue)]), connections: audience,
                users: Set(ringing).union([ended.record.createdBy])))
        if ended.sfu != nil {
            calls[cid]!.sfu = nil
            out.mutations.append(.deletePlacement(cid))
            out.releasedPlacements.append(cid)
        }
        out.metrics.append(.callEnded(reason))
    }

    /// The admin API removes one session (reason `kicked`).
    public mutating func kick(_ session: SessionID, from cid: CallCID, now: Date, out: inout CallOutput) throws(SwitchboardError) {
        guard calls[cid]?.sessions[session] != nil else { throw SwitchboardError(.sessionNotFound, "no active session \(session) in \(cid)") }
        removeSession(session, reason: "kicked", now: now, out: &out)
    }

    /// A client connection's resume window passed: its sessions leave (`connection_lost`).
    public mutating func connectionLost(_ connection: ClientConnectionID, now: Date, out: inout CallOutput) {
        for session in (connectionSessions[connection] ?? []).sorted() {
            removeSession(session, reason: "connection_lost", now: now, out: &out)
        }
    }

    /// Sets the SFU of every live call from `lookup` (after a restart rebuild).
    public mutating func restoreSFUs(_ lookup: (CallCID) -> SFUAssignment?) {
        for cid in calls.keys where calls[cid]!.record.isLive { calls[cid]!.sfu = lookup(cid) }
    }

    /// The call's SFU moved (failover): participants get `call.sfu_changed`.
    public mutating func sfuChanged(_ cid: CallCID, to sfu: SFUAssignment, now: Date, out: inout CallOutput) {
        guard let call = calls[cid], call.record.isLive else { return }
        calls[cid]!.sfu = sfu
        // The same SFU as before: a move announced after a restart, whose previous SFU is not
        // known any more (the restart took the call's SFU from the moved placement).
        let previous = call.sfu.flatMap { $0.id == sfu.id ? nil : $0.id }
        log("call.sfu_changed", call, .object(["sfu": sfu.json, "previous_sfu_id": .optional(previous)]), now: now, out: &out)
        guard sfu.room != nil else {
            out.notices.append(
                CallNotice(type: "call.sfu_changed", cid: cid, data: .object(["call_cid": .string(cid.cid), "sfu": sfu.json]), connections: call.participantConnections))
            return
        }
        // With a room, each session gets its own token for it: one notice per session.
        for session in call.sessions.values.sorted(by: { $0.sessionID < $1.sessionID }) {
            let data: JSONValue = .object([
                "call_cid": .string(cid.cid), "session_id": .string(session.sessionID.rawValue), "sfu": sfu.json(for: session.sessionID),
            ])
            out.notices.append(CallNotice(type: "call.sfu_changed", cid: cid, data: data, connections: [session.connection]))
        }
    }
}
