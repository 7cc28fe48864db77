import Foundation

extension CallGateway {
    /// A token check finished (frames held meanwhile get no SFU; see the `placer:` variant).
    public mutating func tokenChecked(
        _ socket: ConnectionID, purpose: TokenPurpose, result: Result<UserToken, SwitchboardError>, namedUser: String? = nil, now: Date,
        newID: () -> String, into output: inout CallGatewayOutput
    ) {
        tokenChecked(socket, purpose: purpose, result: result, namedUser: namedUser, placer: SFUTable.none, now: now, newID: newID, into: &output)
    }

    /// A token check finished. On success, frames that arrived meanwhile run in order.
    /// `namedUser` is the user a refused but genuine token names (see
    /// ``TokenVerifier/namedUser(ofRefused:)``): the failure counts against that user at the
    /// address, and a user locked out there is refused even with a good token, while others at
    /// the same address are not.
    public mutating func tokenChecked(
        _ socket: ConnectionID, purpose: TokenPurpose, result: Result<UserToken, SwitchboardError>, namedUser: String? = nil,
        placer: some CallPlacer, now: Date, newID: () -> String, into output: inout CallGatewayOutput
    ) {
        switch purpose {
        case .auth(let id, let resume):
            guard let waiting = pending[socket] else { return }
            let named = (try? result.get().userID) ?? namedUser
            let user = named.flatMap(UserID.init)
            switch validated(result, now: now) {
            case .failure(let error): refuse(socket, id: id, error, user: user, into: &output)
            case .success where isBlocked(waiting.remoteAddress, user: user, now: now):
                let error = SwitchboardError(.rateLimited, "too many failed authentications by this user from this address; try later")
                refuse(socket, id: id, error, code: .tryAgainLater, into: &output)
            case .success(let token):
                authenticate(socket, id: id, token: token, resume: resume, now: now, newID: newID, into: &output)
                for frame in waiting.queued where sockets[socket] != nil {
                    frameReceived(socket, frame, placer: placer, newID: newID, now: now, into: &output)
                }
            }
        case .refresh(let id):
            guard let state = sockets[socket], let client = clients[state.client] else { return }
            switch validated(result, now: now) {
            case .failure(let error):
                output.authFailures.append(error.code.rawValue)
                respond(socket, id: id, .failure(error), into: &output)
            case .success(let token) where token.userID != client.user.rawValue:
                respond(socket, id: id, .failure(SwitchboardError(.forbidden, "token.refresh must keep the same user")), into: &output)
            case .success(let token):
                clients[client.id]?.token = token
                clients[client.id]?.expiringSent = false
                wake(by: deadline(of: clients[client.id]!))
                output.calls.mutations.append(.saveConnection(clients[client.id]!.record))
                respond(socket, id: id, .success(.object(["expires_at": .time(token.expiresAt)])), into: &output)
            }
        }
    }

    /// A verified token that is usable now: a valid user id, not yet expired.
    func validated(_ result: Result<UserToken, SwitchboardError>, now: Date) -> Result<UserToken, SwitchboardError> {
        guard case .success(let token) = result else { return result }
        guard UserID(token.userID) != nil else { return .failure(SwitchboardError(.tokenInvalid, "the token's user id is not usable")) }
        guard token.expiresAt > now else { return .failure(SwitchboardError(.tokenExpired, "the token has expired")) }
        return .success(token)
    }

    mutating func authenticate(
        _ socket: ConnectionID, id: JSONValue, token: UserToken, resume: ResumeRequest?, now: Date, newID: () -> String,
        into output: inout CallGatewayOutput
    ) {
        let waiting = pending.removeValue(forKey: socket)!
        let user = UserID(token.userID)!
        if let resume, let client = resumable(resume, user: user) {
            resumeClient(client, socket: socket, id: id, token: token, lastSeq: resume.lastSeq, remote: waiting.remoteAddress, now: now, into: &output)
            return
        }
        guard attachedCount(of: user) < configuration.connectionsPerUser else {
            pending[socket] = waiting
            refuse(socket, id: id, SwitchboardError(.rateLimited, "\(user) already holds \(configuration.connectionsPerUser) connections"), code: .tryAgainLater, into: &output)
            return
        }
        let client = ClientConnection(
            id: ClientConnectionID(newID()), user: user, token: token, resumeToken: newID().replacingOccurrences(of: "-", with: "") + newID().replacingOccurrences(of: "-", with: ""),
            connectedAt: now, socket: socket, remoteAddress: waiting.remoteAddress)
        clients[client.id] = client
        userClients[user, default: []].insert(client.id)
        output.createdClients.insert(client.id)
        sockets[socket] = SocketState(client: client.id, lastActivity: now, remoteAddress: waiting.remoteAddress, bucket: messageBucket(now))
        output.calls.mutations.append(.saveConnection(client.record))
        wake(by: min(deadline(of: client), now.addingTimeInterval(configuration.idleTimeout.seconds)))
        respondOK(socket, id: id, client: client, resumed: false, replayed: 0, complete: true, into: &output)
        for notice in engine.pendingRings(for: user) where mayWatch(client.id, notice.cid) {
            emit(type: notice.type, cid: notice.cid, data: notice.data, to: client.id, into: &output)
        }
    }

    /// The client connection a resume names, if it belongs to `user` and is still held.
    func resumable(_ resume: ResumeRequest, user: UserID) -> ClientConnection? {
        (userClients[user] ?? []).lazy.compactMap { self.clients[$0] }.first { ConstantTime.equals($0.resumeToken, resume.token) }
    }

    mutating func resumeClient(
        _ previous: ClientConnection, socket: ConnectionID, id: JSONValue, token: UserToken, lastSeq: UInt64, remote: String, now: Date,
        into output: inout CallGatewayOutput
    ) {
        var client = previous
        if let old = client.socket {
            sockets[old] = nil
            output.commands.append(.close(old, .replaced, reason: "resumed on another socket"))
        }
        client.socket = socket
        client.detachedAt = nil
        client.token = token
        client.expiringSent = false
        client.remoteAddress = remote
        let missed = client.buffer.filter { $0.seq > lastSeq }
        let oldest = client.buffer.first?.seq ?? client.nextSeq
        let complete = !client.restored && lastSeq + 1 >= oldest && lastSeq < client.nextSeq
        client.restored = false
        if lastSeq >= client.nextSeq { client.nextSeq = lastSeq + 1 }
        clients[client.id] = client
        sockets[socket] = SocketState(client: client.id, lastActivity: now, remoteAddress: remote, bucket: messageBucket(now))
        output.calls.mutations.append(.saveConnection(client.record))
        wake(by: min(deadline(of: client), now.addingTimeInterval(configuration.idleTimeout.seconds)))
        respondOK(socket, id: id, client: client, resumed: true, replayed: missed.count, complete: complete, into: &output)
        for event in missed { output.commands.append(.send(socket, event.frame)) }
        if !complete {
            for notice in engine.pendingRings(for: client.user) where mayWatch(client.id, notice.cid) {
                emit(type: notice.type, cid: notice.cid, data: notice.data, to: client.id, into: &output)
            }
        }
    }

    mutating func respondOK(
        _ socket: ConnectionID, id: JSONValue, client: ClientConnection, resumed: Bool, replayed: Int, complete: Bool, into output: inout CallGatewayOutput
    ) {
        let data = JSONValue.object([
            "connection_id": .string(client.id.rawValue), "user_id": .string(client.user.rawValue), "expires_at": .time(client.token.expiresAt),
            "resume_token": .string(client.resumeToken), "resumed": .bool(resumed), "replayed": .number(Double(replayed)),
            "replay_complete": .bool(complete), "last_seq": .number(Double(client.nextSeq - 1)),
            "sessions": .array(sessions(of: client.id).map { .string($0.rawValue) }),
        ])
        var fields: [String: JSONValue] = ["type": .string("connection.ok"), "data": data]
        if id != .null { fields["id"] = id }
        output.commands.append(.send(socket, JSONValue.object(fields).bytes))
        output.responded.append((socket, id))
    }
}

extension CallGateway {
    /// A client connection's active sessions, sorted: in calls run here, and those it joined
    /// in calls other nodes run (through them, or held when it was taken over).
    func sessions(of client: ClientConnectionID) -> [SessionID] {
        var all = engine.sessions(of: client)
        if let elsewhere = remoteSessions[client] { all.formUnion(elsewhere.keys) }
        return all.sorted()
    }
}
