import Foundation

extension CallEngine {
    /// `call.join`: a new participant session, with the call's SFU and its participants.
    /// Creates the call when asked; reopens an ended call (as a new call session, without
    /// ringing) when its type allows.
    public mutating func join(
        _ cid: CallCID, create: Bool, ring: Bool, members: [UserID], location: LocationHint?, by actor: CallActor,
        placer: some CallPlacer, newID: () -> String, now: Date, out: inout CallOutput
    ) throws(SwitchboardError) -> JSONValue {
        // Every check, and placement, comes before the first change: a refused join changes nothing.
        let buckets = ringBuckets
        var plan: CreatePlan?
        var hints = [location ?? LocationHint()]
        if let call = calls[cid] {
            try checkJoinable(call, by: actor)
            hints = call.sessions.values.sorted { $0.joinedAt < $1.joinedAt }.map { $0.location ?? LocationHint() } + hints
        } else {
            guard create else { throw SwitchboardError(.callNotFound, "no call \(cid); join with create: true to create it") }
            plan = try planCreate(cid, members: members, ring: ring, custom: .object([:]), by: actor, now: now)
        }
        let sfu: SFUAssignment?
        let previous = calls[cid].flatMap { $0.record.isLive ? $0.sfu : nil }
        do throws(SwitchboardError) {
            sfu = try placer.place(cid, participants: hints, current: previous, now: now, out: &out)
        } catch {
            ringBuckets = buckets  // no ring happened: give back the tokens planCreate took
            throw error
        }
        if let plan { apply(plan, by: actor, now: now, out: &out) }
        if !calls[cid]!.record.isLive { reopen(cid, now: now, out: &out) }
        if let previous, let sfu, sfu != previous {
            sfuChanged(cid, to: sfu, now: now, out: &out)  // its SFU went down before failover moved it
        } else {
            calls[cid]?.sfu = sfu
        }
        if let member = calls[cid]!.members[actor.user], member.ringState == .ringing {
            markAccepted(member, in: cid, by: actor.connection, now: now, out: &out)
        }
        let call = calls[cid]!
        let session = SessionRecord(
            sessionID: SessionID(newID()), cid: cid, callSession: call.record.session, userID: actor.user, connection: actor.connection,
            role: actor.user == call.record.createdBy ? .initiator : .participant, joinedAt: now, location: location)
        admit(session, now: now, out: &out)
        guard case .object(var result) = calls[cid]!.stateJSON else { return .null }
        result["session_id"] = .string(session.sessionID.rawValue)
        result["role"] = .string(session.role.rawValue)
        result["sfu"] = sfu?.json(for: session.sessionID) ?? .null
        return .object(result)
    }

    /// Members-only, reopen and capacity checks for joining an existing call.
    func checkJoinable(_ call: LiveCall, by actor: CallActor) throws(SwitchboardError) {
        try checkVisible(call, to: actor)
        if !call.record.isLive, !call.settings.reopen {
            throw SwitchboardError(.callEnded, "call \(call.cid) has ended and its type does not reopen")
        }
        guard call.sessions.count < call.settings.maxParticipants else {
            throw SwitchboardError(.callFull, "call \(call.cid) has its \(call.settings.maxParticipants) participants")
        }
    }

    /// Adds an active session and tells the call's other connections.
    mutating func admit(_ session: SessionRecord, now: Date, out: inout CallOutput) {
        let cid = session.cid
        let others = calls[cid]!.participantConnections
        calls[cid]!.sessions[session.sessionID] = session
        index(session)
        out.mutations.append(.saveSession(session))
        if calls[cid]!.record.emptyDeadline != nil {
            var record = calls[cid]!.record
            record.emptyDeadline = nil
            saveRecord(record, out: &out)
        }
        let call = calls[cid]!
        if others.isEmpty { log("call.session_started", call, .object(["session": .number(Double(call.record.session))]), now: now, out: &out) }
        let participant = session.json(dominant: call.dominant.current)
        log("call.participant_joined", call, .object(["session_id": .string(session.sessionID.rawValue), "user_id": .string(session.userID.rawValue)]), now: now, out: &out)
        out.notices.append(
            CallNotice(type: "call.participant_joined", cid: cid, data: .object(["call_cid": .string(cid.cid), "participant": participant]), connections: others))
        out.metrics.append(.joined)
    }

    /// An ended call starts its next session.
    mutating func reopen(_ cid: CallCID, now: Date, out: inout CallOutput) {
        var record = calls[cid]!.record
        record.session += 1
        record.endedAt = nil
        record.endedReason = nil
        record.autoCancelAt = nil
        record.emptyDeadline = nil
        saveRecord(record, out: &out)
        calls[cid]!.dominant = DominantSpeaker()
        log("call.reopened", calls[cid]!, .object(["session": .number(Double(record.session))]), now: now, out: &out)
        out.metrics.append(.callStarted)
    }

    /// `call.leave`: the given session of this connection, or all its sessions in the call.
    public mutating func leave(_ cid: CallCID, session: SessionID?, by actor: CallActor, now: Date, out: inout CallOutput) throws(SwitchboardError) -> JSONValue {
        let call = try live(cid)
        let mine = call.sessions.values.filter { $0.connection == actor.connection || ($0.userID == actor.user && $0.sessionID == session) }
        let leaving = session.map { id in mine.filter { $0.sessionID == id } } ?? mine
        guard !leaving.isEmpty else {
            throw SwitchboardError(session == nil ? .notAMember : .sessionNotFound, "no session of yours in \(cid)")
        }
        for record in leaving.sorted(by: { $0.sessionID < $1.sessionID }) {
            removeSession(record.sessionID, reason: "left", now: now, out: &out)
        }
        return .object(["left": .array(leaving.map { .string($0.sessionID.rawValue) }.sorted { $0.text < $1.text })])
    }

    /// Ends a session (left, connection lost, kicked) and applies the call's rules: the
    /// initiator leaving may end it; an empty call arms its empty timer.
    public mutating func removeSession(_ id: SessionID, reason: String, now: Date, out: inout CallOutput) {
        guard let cid = sessionCalls[id], var session = calls[cid]?.sessions[id] else { return }
        session.leftAt = now
        session.leftReason = reason
        calls[cid]!.sessions[id] = nil
        unindex(session)
        out.mutations.append(.saveSession(session))
        let payload = JSONValue.object(["session_id": .string(id.rawValue), "user_id": .string(session.userID.rawValue), "reason": .string(reason)])
        log("call.participant_left", calls[cid]!, payload, now: now, out: &out)
        let call = calls[cid]!
        if call.sessions.isEmpty { logSessionEnded(call, reason: reason, now: now, out: &out) }
        // A session removed by someone else (kicked) hears of it too; one that left knows.
        var audience = call.participantConnections
        if reason != "left" { audience.insert(session.connection) }
        out.notices.append(
            CallNotice(type: "call.participant_left", cid: cid, data: .object(["call_cid": .string(cid.cid), "participant": payload]), connections: audience))
        updateDominant(cid, now: now, out: &out)
        if call.settings.endWhenInitiatorLeaves, session.userID == call.record.createdBy, !call.hasSession(of: session.userID) {
            cancelRing(cid, now: now, out: &out)
            end(cid, reason: .initiatorLeft, now: now, out: &out)
        } else if call.sessions.isEmpty {
            armEmptyTimer(cid, now: now, out: &out)
        }
    }

    /// A call with no participants and nobody ringing ends after the type's empty timeout
    /// (armed once: a timer already running keeps its deadline).
    mutating func armEmptyTimer(_ cid: CallCID, now: Date, out: inout CallOutput) {
        guard let call = calls[cid], call.record.isLive, call.record.emptyDeadline == nil, call.sessions.isEmpty, call.ringingMembers.isEmpty else {
            return
        }
        var record = call.record
        record.emptyDeadline = now.addingTimeInterval(call.settings.emptyTimeout.seconds)
        saveRecord(record, out: &out)
    }

    /// The call session's last participant left (or the call ended with participants).
    func logSessionEnded(_ call: LiveCall, reason: String, now: Date, out: inout CallOutput) {
        log("call.session_ended", call, .object(["session": .number(Double(call.record.session)), "reason": .string(reason)]), now: now, out: &out)
    }
}
