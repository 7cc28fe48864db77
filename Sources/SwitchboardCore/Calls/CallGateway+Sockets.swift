import Foundation

extension CallGateway {
    /// A socket opened on `/v1/connect`. With a token (from the `Authorization: Bearer` header
    /// or the `token` query parameter) verification starts at once; otherwise the client has
    /// ``CallConfiguration/authTimeout`` to send `{"type":"auth",…}`.
    public mutating func socketOpened(
        _ socket: ConnectionID, token: String?, resume: ResumeRequest?, remoteAddress: String, now: Date, into output: inout CallGatewayOutput
    ) {
        pending[socket] = PendingSocket(openedAt: now, remoteAddress: remoteAddress, verifying: token != nil)
        wake(by: now.addingTimeInterval(configuration.authTimeout.seconds))
        if isBlocked(remoteAddress, now: now) {
            refuse(socket, id: .null, SwitchboardError(.rateLimited, "too many failed authentications from this address; try later"), code: .tryAgainLater, into: &output)
            return
        }
        if let token { output.tokenChecks.append(TokenCheck(socket: socket, token: token, purpose: .auth(id: .null, resume: resume))) }
    }

    /// The socket closed. Its client connection waits ``CallConfiguration/resumeWindow`` for a
    /// resume before its sessions leave.
    public mutating func socketClosed(_ socket: ConnectionID, now: Date) {
        pending[socket] = nil
        pending.releaseSpareCapacity()
        defer { sockets.releaseSpareCapacity() }
        guard let state = sockets.removeValue(forKey: socket) else { return }
        detach(state.client, socket: socket, now: now)
    }

    /// A text frame arrived.
    public mutating func frameReceived(
        _ socket: ConnectionID, _ bytes: [UInt8], placer: some CallPlacer, newID: () -> String, now: Date, into output: inout CallGatewayOutput
    ) {
        frameReceived(socket, bytes, parsed: parse(bytes), placer: placer, newID: newID, now: now, into: &output)
    }

    /// Parses a frame with this gateway's limits (hosts parse once, look at the call it
    /// touches, then hand both to ``frameReceived(_:_:parsed:placer:newID:now:into:)``).
    public func parse(_ bytes: [UInt8]) -> Result<ClientFrame, ClientFrame.ParseFailure> {
        ClientFrame.parse(bytes, maxCustomBytes: configuration.maxCustomBytes)
    }

    /// A text frame arrived, already parsed.
    public mutating func frameReceived(
        _ socket: ConnectionID, _ bytes: [UInt8], parsed: Result<ClientFrame, ClientFrame.ParseFailure>, placer: some CallPlacer,
        newID: () -> String, now: Date, into output: inout CallGatewayOutput
    ) {
        if let waiting = pending[socket] {
            unauthenticatedFrame(socket, bytes, parsed, waiting, into: &output)
            return
        }
        guard var state = sockets[socket], let client = clients[state.client] else { return }
        state.lastActivity = now
        sockets[socket] = state
        switch parsed {
        case .failure(let failure):
            respond(socket, id: failure.id, .failure(failure.error), into: &output)
        case .success(let frame):
            guard admitRequest(socket, id: frame.id, now: now, into: &output) else { return }
            handle(frame, bytes: bytes, on: socket, client: client, placer: placer, newID: newID, now: now, into: &output)
        }
    }

    private mutating func unauthenticatedFrame(
        _ socket: ConnectionID, _ bytes: [UInt8], _ parsed: Result<ClientFrame, ClientFrame.ParseFailure>, _ waiting: PendingSocket, into output: inout CallGatewayOutput
    ) {
        if waiting.verifying, waiting.queued.count < PendingSocket.maximumQueued {
            pending[socket]?.queued.append(bytes)
            return
        }
        switch parsed {
        case .success(let frame):
            guard case .auth(let token, let resume) = frame.request, !waiting.verifying else {
                let message = waiting.verifying ? "too many frames before authentication finished" : "the first frame must be {\"type\":\"auth\",\"token\":…}"
                refuse(socket, id: frame.id, SwitchboardError(.unauthenticated, message), into: &output)
                return
            }
            pending[socket]?.verifying = true
            output.tokenChecks.append(TokenCheck(socket: socket, token: token, purpose: .auth(id: frame.id, resume: resume)))
        case .failure(let failure):
            let error = failure.error.code == .unauthenticated ? failure.error : SwitchboardError(.unauthenticated, "authenticate first: \(failure.error.message)")
            refuse(socket, id: failure.id, error, into: &output)
        }
    }

    /// The admin API ends a call.
    public mutating func adminEnd(_ cid: CallCID, now: Date, into output: inout CallGatewayOutput) throws(SwitchboardError) -> JSONValue {
        let result = try engine.endByAdmin(cid, now: now, out: &output.calls)
        flush(into: &output)
        return result
    }

    /// The admin API removes a participant session.
    public mutating func adminKick(_ session: SessionID, from cid: CallCID, now: Date, into output: inout CallGatewayOutput) throws(SwitchboardError) {
        try engine.kick(session, from: cid, now: now, out: &output.calls)
        flush(into: &output)
    }

    /// A call's SFU moved.
    public mutating func sfuChanged(_ cid: CallCID, to sfu: SFUAssignment, now: Date, into output: inout CallGatewayOutput) {
        engine.sfuChanged(cid, to: sfu, now: now, out: &output.calls)
        flush(into: &output)
    }

    /// Delivers the notices the engine produced so far (once per step, so they are numbered
    /// in order).
    mutating func flush(into output: inout CallGatewayOutput) {
        let notices = output.calls.notices
        output.calls.notices.removeAll()
        output.deliveredNotices += notices.count
        deliver(notices, into: &output)
        if sharesCalls {
            // Connections held elsewhere, and users who may have devices elsewhere.
            output.remoteNotices += notices.filter { notice in !notice.users.isEmpty || notice.connections.contains { clients[$0] == nil } }
        }
    }
}
