/// One call's operations (after the product documents' `CallController`): join, accept,
/// reject, leave, end, invite, media updates, custom events and `signal.send`. Each answer is
/// applied to the observable ``Call`` before the method returns, as it is read: after the events
/// the server sent before it and before those it sent after it.
public struct CallController: Sendable {
    public let client: SwitchboardClient
    public let callID: CallID

    /// The observable call.
    public func call() async -> Call { await client.call(callID) }

    private var address: [String: JSONValue] { ["type": .string(callID.type), "id": .string(callID.id)] }

    private func send(
        _ type: String, _ extra: [String: JSONValue] = [:], applying: (@Sendable (JSONValue) async -> Void)? = nil
    ) async throws(SwitchboardClientError) -> JSONValue {
        try await client.request(type, data: address.merging(extra) { _, new in new }, applying: applying)
    }

    /// Sends `type`, whose answer is a call snapshot, applied to the call as it is read (before
    /// the events the server sent after it).
    private func requestSnapshot(_ type: String, _ extra: [String: JSONValue] = [:]) async throws(SwitchboardClientError) -> Call {
        let call = await call()
        let data = try await send(type, extra, applying: call.applySnapshot)
        _ = try Wire.decode(CallSnapshot.self, from: data)
        return call
    }

    /// `call.get_or_create`: the call, created with `members` (ringing them with `ring`) when
    /// the id is new. Does not join.
    @discardableResult
    public func getOrCreate(members: [String] = [], ring: Bool = false, custom: [String: JSONValue]? = nil) async throws(SwitchboardClientError) -> Call {
        var extra: [String: JSONValue] = ["members": .array(members.map { .string($0) }), "ring": .bool(ring)]
        if let custom { extra["custom"] = .object(custom) }
        return try await requestSnapshot("call.get_or_create", extra)
    }

    /// `call.get`: the call's state now.
    @discardableResult
    public func get() async throws(SwitchboardClientError) -> Call {
        try await requestSnapshot("call.get")
    }

    /// `call.join`: a new participant session (creating the call with `members` and `ring` when
    /// `create` and the id is new). Joining a call that rings this user accepts it.
    /// `unavailable` and `rate_limited` are retried for `config.joinRetryWindow`.
    @discardableResult
    public func joinCall(
        members: [String] = [], ring: Bool = false, create: Bool = true, location: CallLocation? = nil
    ) async throws(SwitchboardClientError) -> Call {
        var extra: [String: JSONValue] = ["create": .bool(create)]
        if create {
            extra["members"] = .array(members.map { .string($0) })
            extra["ring"] = .bool(ring)
        }
        if let location { extra["location"] = location.json }
        let deadline = ContinuousClock.now + client.config.joinRetryWindow
        var attempt = 0
        while true {
            do throws(SwitchboardClientError) {
                let call = await call()
                _ = try Wire.decode(JoinResult.self, from: try await send("call.join", extra, applying: call.applyJoinAnswer))
                return call
            } catch where error.isRetryable && error.code != .timeout && ContinuousClock.now < deadline {
                try? await Task.sleep(for: client.config.backoff.delay(attempt: attempt, unit: 0.5))
                attempt += 1
            }
        }
    }

    /// `call.accept`: accepts this user's ring (join next, or join instead, which accepts).
    @discardableResult
    public func accept() async throws(SwitchboardClientError) -> Call { try await requestSnapshot("call.accept") }

    /// `call.reject`: `decline` (default), `busy`, `cancel` (the initiator cancels the ring) or `timeout`.
    @discardableResult
    public func reject(reason: String = "decline") async throws(SwitchboardClientError) -> Call {
        let call = try await requestSnapshot("call.reject", ["reason": .string(reason)])
        await client.disconnectIfIdle()
        return call
    }

    /// `call.leave`: every session this connection holds in the call (or just `sessionID`).
    public func leave(sessionID: String? = nil) async throws(SwitchboardClientError) {
        let call = await call()
        _ = try await send("call.leave", sessionID.map { ["session_id": .string($0)] } ?? [:], applying: call.applyLeaveAnswer)
        await client.disconnectIfIdle()
    }

    /// `call.end`: ends the call for everyone (the initiator or an admin token).
    @discardableResult
    public func end() async throws(SwitchboardClientError) -> Call {
        let call = try await requestSnapshot("call.end")
        await client.disconnectIfIdle()
        return call
    }

    /// `call.invite`: adds members without ringing them.
    @discardableResult
    public func invite(_ members: [String]) async throws(SwitchboardClientError) -> Call {
        try await requestSnapshot("call.invite", ["members": .array(members.map { .string($0) })])
    }

    /// `call.update_participant`: what this session publishes (only the fields set change).
    @discardableResult
    public func updateParticipant(_ update: MediaUpdate, sessionID: String? = nil) async throws(SwitchboardClientError) -> Participant {
        var extra = update.fields
        if let sessionID { extra["session_id"] = .string(sessionID) }
        return try Wire.decode(Participant.self, from: try await send("call.update_participant", extra))
    }

    /// `call.send_event`: a custom object to every participant.
    public func sendEvent(_ custom: [String: JSONValue]) async throws(SwitchboardClientError) {
        _ = try await send("call.send_event", ["custom": .object(custom)])
    }

    /// `signal.send`: WebRTC signalling (`offer`, `answer`, `candidate`) to another session.
    public func sendSignal(to session: String, kind: String, payload: JSONValue, from sessionID: String? = nil) async throws(SwitchboardClientError) {
        var data: [String: JSONValue] = ["to_session": .string(session), "kind": .string(kind), "payload": payload]
        if let sessionID { data["session_id"] = .string(sessionID) }
        _ = try await client.request("signal.send", data: data)
    }
}
