import Foundation

extension CallGateway {
    /// Runs one request of an authenticated client and answers it.
    mutating func handle(
        _ frame: ClientFrame, bytes: [UInt8], on socket: ConnectionID, client: ClientConnection, placer: some CallPlacer, newID: () -> String,
        now: Date, into output: inout CallGatewayOutput
    ) {
        let actor = client.actor
        switch frame.request {
        case .auth:
            respond(socket, id: frame.id, .failure(SwitchboardError(.invalidRequest, "already authenticated")), into: &output)
        case .ping:
            output.commands.append(.send(socket, JSONValue.object(["id": frame.id, "type": .string("pong")]).bytes))
        case .tokenRefresh(let token):
            output.tokenChecks.append(TokenCheck(socket: socket, token: token, purpose: .refresh(id: frame.id)))
        case .registerDevice(let provider, let token):
            let result = Result { () throws(SwitchboardError) -> JSONValue in
                try registerDevice(DeviceRecord(userID: client.user, provider: provider, token: token, createdAt: now), out: &output.calls)
            }
            respond(socket, id: frame.id, result, into: &output)
        case .unregisterDevice(let provider, let token):
            let key = DeviceKey(provider: provider, token: token)
            let result = Result { () throws(SwitchboardError) -> JSONValue in
                guard deviceOwners[key] == client.user else { throw SwitchboardError(.notFound, "no such device of yours") }
                removeDevice(key, out: &output.calls)
                return .object(["removed": .bool(true)])
            }
            respond(socket, id: frame.id, result, into: &output)
        case .listDevices:
            respond(socket, id: frame.id, .success(.object(["devices": .array((devices[client.user] ?? []).map(\.json))])), into: &output)
        default:
            if let cid = frame.request.cid, !actor.may(touch: cid) {
                respond(socket, id: frame.id, .failure(SwitchboardError(.forbidden, "this token may not touch \(cid)")), into: &output)
                return
            }
            if let cid = frame.request.cid, let refusal = refusedCalls[cid] {
                respond(socket, id: frame.id, .failure(refusal), into: &output)
                return
            }
            if forwardIfElsewhere(frame, bytes: bytes, on: socket, client: client, newID: newID, now: now, into: &output) { return }
            let result = Result { () throws(SwitchboardError) -> JSONValue in
                try callRequest(frame.request, actor: actor, remote: client.remoteAddress, placer: placer, newID: newID, now: now, out: &output.calls)
            }
            respond(socket, id: frame.id, result, into: &output)
            flush(into: &output)
        }
    }

    mutating func callRequest(
        _ request: ClientRequest, actor: CallActor, remote: String, placer: some CallPlacer, newID: () -> String, now: Date, out: inout CallOutput
    ) throws(SwitchboardError) -> JSONValue {
        switch request {
        case .getOrCreate(let cid, let members, let ring, let custom):
            return try engine.getOrCreate(cid, members: members, ring: ring, custom: custom, by: actor, now: now, out: &out)
        case .get(let cid):
            return try engine.get(cid, by: actor)
        case .join(let cid, let create, let ring, let members, let location):
            var hint = location ?? LocationHint()
            hint.ip = remote.isEmpty ? nil : remote
            return try engine.join(cid, create: create, ring: ring, members: members, location: hint, by: actor, placer: placer, newID: newID, now: now, out: &out)
        case .leave(let cid, let session):
            return try engine.leave(cid, session: session, by: actor, now: now, out: &out)
        case .end(let cid):
            return try engine.end(cid, by: actor, now: now, out: &out)
        case .invite(let cid, let members):
            return try engine.invite(cid, members: members, by: actor, now: now, out: &out)
        case .accept(let cid):
            return try engine.accept(cid, by: actor, now: now, out: &out)
        case .reject(let cid, let reason):
            return try engine.reject(cid, reason: reason, by: actor, now: now, out: &out)
        case .updateParticipant(let cid, let session, let update):
            return try engine.updateParticipant(cid, session: session, update: update, by: actor, now: now, out: &out)
        case .sendEvent(let cid, let custom):
            return try engine.sendEvent(cid, custom: custom, by: actor, now: now, out: &out)
        case .signal(let from, let to, let kind, let payload):
            return try engine.signal(from: from, to: to, kind: kind, payload: payload, by: actor, out: &out)
        case .auth, .ping, .tokenRefresh, .registerDevice, .unregisterDevice, .listDevices:
            preconditionFailure("handled before the call dispatch")
        }
    }

    /// The call a parsed request would touch, when the host must load it from the store first.
    public func needsLoad(_ parsed: Result<ClientFrame, ClientFrame.ParseFailure>) -> CallCID? {
        guard case .success(let frame) = parsed, let cid = frame.request.cid else { return nil }
        return engine.call(cid) == nil ? cid : nil
    }

    /// Calls that frames queued behind `socket`'s token check touch and that are not in memory:
    /// the host loads them before it hands the gateway the check's answer (what it loaded when
    /// they arrived may have been evicted meanwhile).
    public func callsToLoad(queuedOn socket: ConnectionID) -> [CallCID] {
        guard let waiting = pending[socket] else { return [] }
        return waiting.queued.compactMap { needsLoad(parse($0)) }
    }

    /// Sets live calls' SFUs after a restart (see ``CallEngine/restoreSFUs(_:)``).
    public mutating func restoreSFUs(_ lookup: (CallCID) -> SFUAssignment?) {
        engine.restoreSFUs(lookup)
    }

    /// Requests for these calls are answered with their error until ``clearRefusals()``.
    public mutating func refuse(_ calls: [CallCID: SwitchboardError]) {
        refusedCalls.merge(calls) { _, new in new }
    }

    public mutating func clearRefusals() {
        if !refusedCalls.isEmpty { refusedCalls = [:] }
        if !forwardedCalls.isEmpty { forwardedCalls = [:] }
        if !engine.presence.isEmpty { engine.presence = [:] }
        if !engine.knownRings.isEmpty { engine.knownRings = [:] }
    }

    /// Whether the engine holds `cid` in memory.
    public func holds(_ cid: CallCID) -> Bool { engine.call(cid) != nil }

    /// Makes a call loaded from the store known (see ``CallEngine/adopt(_:members:)``).
    public mutating func adopt(_ record: CallRecord, members: [MemberRecord], sessions: [SessionRecord] = []) {
        engine.adopt(record, members: members, sessions: sessions)
    }
}
