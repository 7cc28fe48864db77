import Foundation

extension CallEngine {
    /// `call.update_participant`: changes a session's media state, tells the call, and keeps
    /// the dominant speaker. Speaking and audio level are not written to the store (they
    /// change several times a second); the published tracks and pins are.
    public mutating func updateParticipant(
        _ cid: CallCID, session: SessionID?, update: MediaUpdate, by actor: CallActor, now: Date, out: inout CallOutput
    ) throws(SwitchboardError) -> JSONValue {
        let call = try live(cid)
        let record = try ownSession(session, in: call, of: actor)
        var next = record
        next.media = update.applied(to: record.media)
        guard next != record else { return next.json(dominant: call.dominant.current) }
        calls[cid]!.sessions[record.sessionID] = next
        let durable = { (media: MediaState) in [media.audio, media.video, media.screenshare, media.pinned] }
        if durable(next.media) != durable(record.media) { out.mutations.append(.saveSession(next)) }
        updateDominant(cid, now: now, out: &out)
        let updated = calls[cid]!
        let participant = next.json(dominant: updated.dominant.current)
        out.notices.append(
            CallNotice(type: "call.participant_updated", cid: cid, data: .object(["call_cid": .string(cid.cid), "participant": participant]), connections: updated.participantConnections))
        return participant
    }

    /// Sends `call.dominant_speaker_changed` when the holder changes.
    mutating func updateDominant(_ cid: CallCID, now: Date, out: inout CallOutput) {
        guard var call = calls[cid] else { return }
        guard call.dominant.update(sessions: call.sessions, now: now, hold: configuration.dominantSpeakerHold) else {
            calls[cid] = call
            return
        }
        calls[cid] = call
        let current = call.dominant.current
        let user = current.flatMap { call.sessions[$0]?.userID }
        let data = JSONValue.object(["call_cid": .string(cid.cid), "session_id": .optional(current?.rawValue), "user_id": .optional(user?.rawValue)])
        log("call.dominant_speaker_changed", call, data, now: now, out: &out)
        out.notices.append(CallNotice(type: "call.dominant_speaker_changed", cid: cid, data: data, connections: call.participantConnections))
    }

    /// `call.send_event`: `call.custom` to everyone in the call. Only participants may send.
    public mutating func sendEvent(_ cid: CallCID, custom: JSONValue, by actor: CallActor, now: Date, out: inout CallOutput) throws(SwitchboardError) -> JSONValue {
        let call = try live(cid)
        guard call.sessions.values.contains(where: { $0.connection == actor.connection }) else {
            throw SwitchboardError(.notAMember, "join \(cid) before sending events to it")
        }
        let data = JSONValue.object(["call_cid": .string(cid.cid), "user_id": .string(actor.user.rawValue), "custom": custom, "created_at": .time(now)])
        log("call.custom", call, data, now: now, out: &out)
        out.notices.append(CallNotice(type: "call.custom", cid: cid, data: data, connections: call.participantConnections))
        return .object([:])
    }

    /// `signal.send`: relays SDP or ICE to another session of the same call, stamped with the
    /// sender's session and user. Nothing is stored.
    public func signal(
        from session: SessionID?, to target: SessionID, kind: SignalKind, payload: JSONValue, by actor: CallActor, out: inout CallOutput
    ) throws(SwitchboardError) -> JSONValue {
        guard let cid = sessionCalls[target], let call = calls[cid], let destination = call.sessions[target] else {
            throw SwitchboardError(.sessionNotFound, "no active session \(target)")
        }
        guard actor.may(touch: cid) else { throw SwitchboardError(.forbidden, "this token may not touch \(cid)") }
        let sender: SessionRecord
        do {
            sender = try ownSession(session, in: call, of: actor)
        } catch {
            throw SwitchboardError(.forbidden, "you have no session in the call of \(target)")
        }
        let data = JSONValue.object([
            "call_cid": .string(cid.cid), "from_session": .string(sender.sessionID.rawValue), "from_user": .string(actor.user.rawValue),
            "to_session": .string(target.rawValue), "kind": .string(kind.rawValue), "payload": payload,
        ])
        out.notices.append(CallNotice(type: "signal", cid: cid, data: data, connections: [destination.connection]))
        return .object(["delivered_to": .string(target.rawValue)])
    }

    /// The actor's session in `call`: the one named, or the connection's only one.
    func ownSession(_ session: SessionID?, in call: LiveCall, of actor: CallActor) throws(SwitchboardError) -> SessionRecord {
        let mine = call.sessions.values.filter { $0.connection == actor.connection }
        if let session {
            guard let record = mine.first(where: { $0.sessionID == session }) else {
                throw SwitchboardError(.sessionNotFound, "no session \(session) of this connection in \(call.cid)")
            }
            return record
        }
        guard mine.count == 1, let only = mine.first else {
            throw SwitchboardError(mine.isEmpty ? .notAMember : .invalidRequest, mine.isEmpty ? "join \(call.cid) first" : "name data.session_id: this connection has several sessions in \(call.cid)")
        }
        return only
    }
}
