import Foundation

extension CallGateway {
    /// Fires every deadline due at `now`: auth timeouts, idle sockets, token expiry warnings
    /// and expiry, resume windows, and the engine's ring and empty-call deadlines.
    /// Sockets and connections are scanned only when the earliest of their deadlines is due
    /// (``wakeAt``), so an idle daemon with many connections does not walk them every tick.
    public mutating func tick(now: Date, into output: inout CallGatewayOutput) {
        if now >= wakeAt {
            scanConnections(now: now, into: &output)
            expireForwards(now: now, into: &output)
            wakeAt = nextConnectionDeadline(now: now)
        }
        engine.tick(now: now, out: &output.calls)
        flush(into: &output)
    }

    private mutating func scanConnections(now: Date, into output: inout CallGatewayOutput) {
        for (socket, waiting) in pending.sorted(by: { $0.key < $1.key }) where !waiting.verifying {
            if now.timeIntervalSince(waiting.openedAt) >= configuration.authTimeout.seconds {
                refuse(socket, id: .null, SwitchboardError(.unauthenticated, "no auth frame within \(configuration.authTimeout)"), into: &output)
            }
        }
        for (socket, state) in sockets.sorted(by: { $0.key < $1.key }) where now.timeIntervalSince(state.lastActivity) >= configuration.idleTimeout.seconds {
            sockets[socket] = nil
            output.commands.append(.close(socket, .idleTimeout, reason: "idle timeout"))
            detach(state.client, socket: socket, now: now)
        }
        for id in clients.keys.sorted() { tickClient(id, now: now, into: &output) }
        pruneAuthFailures(now: now)
        sockets.releaseSpareCapacity()
        clients.releaseSpareCapacity()
        userClients.releaseSpareCapacity()
    }

    /// The earliest auth, idle, token or resume-window deadline (a lower bound: activity only
    /// moves deadlines later).
    func nextConnectionDeadline(now: Date) -> Date {
        var earliest = Date.distantFuture
        for waiting in pending.values where !waiting.verifying {
            earliest = min(earliest, waiting.openedAt.addingTimeInterval(configuration.authTimeout.seconds))
        }
        for state in sockets.values { earliest = min(earliest, state.lastActivity.addingTimeInterval(configuration.idleTimeout.seconds)) }
        for client in clients.values { earliest = min(earliest, deadline(of: client)) }
        if !authFailures.isEmpty { earliest = min(earliest, now.addingTimeInterval(60)) }
        if let forward = nextForwardDeadline { earliest = min(earliest, forward) }
        return earliest
    }

    /// When `client` next needs attention: its resume window's end, or its token's warning/expiry.
    func deadline(of client: ClientConnection) -> Date {
        if let detached = client.detachedAt { return detached.addingTimeInterval(configuration.resumeWindow.seconds) }
        return client.expiringSent ? client.token.expiresAt : client.token.expiresAt.addingTimeInterval(-configuration.tokenExpiringLead.seconds)
    }

    /// Makes the next tick scan connections no later than `date`.
    mutating func wake(by date: Date) {
        wakeAt = min(wakeAt, date)
    }

    private mutating func tickClient(_ id: ClientConnectionID, now: Date, into output: inout CallGatewayOutput) {
        guard let client = clients[id] else { return }
        if let detached = client.detachedAt {
            guard now.timeIntervalSince(detached) >= configuration.resumeWindow.seconds else { return }
            engine.connectionLost(id, now: now, out: &output.calls)
            if sharesCalls { output.lostConnections.append(id) }
            clients[id] = nil
            remoteSessions[id] = nil
            userClients[client.user]?.remove(id)
            if userClients[client.user]?.isEmpty == true { userClients[client.user] = nil }
            output.calls.mutations.append(.deleteConnection(id))
            return
        }
        guard let socket = client.socket else { return }
        if now >= client.token.expiresAt {
            sockets[socket] = nil
            output.commands.append(.send(socket, Self.errorFrame(.null, SwitchboardError(.tokenExpired, "the token expired; reconnect with a new one and resume"))))
            output.commands.append(.close(socket, .unauthenticated, reason: "token_expired"))
            detach(id, socket: socket, now: now)
        } else if !client.expiringSent, now.timeIntervalSince(client.token.expiresAt) >= -configuration.tokenExpiringLead.seconds {
            clients[id]?.expiringSent = true
            emit(type: "connection.token_expiring", cid: nil, data: .object(["expires_at": .time(client.token.expiresAt)]), to: id, into: &output)
        }
    }

    mutating func detach(_ client: ClientConnectionID, socket: ConnectionID, now: Date) {
        guard clients[client]?.socket == socket else { return }
        clients[client]?.socket = nil
        clients[client]?.detachedAt = now
        wake(by: now.addingTimeInterval(configuration.resumeWindow.seconds))
    }

    /// Rebuilds from the store at start: live calls, ring deadlines, sessions, and the client
    /// connections this node may hold (on a store several daemons share, those no node stamped
    /// or stamped with `node`: another node's are taken over by a resume, ``adopt(_:now:)``),
    /// detached, with a fresh resume window from `now`.
    /// Sessions whose connection is not on record at all leave at once (`connection_lost`);
    /// commit `output` before serving.
    public mutating func restore(_ snapshot: CallStateSnapshot, now: Date, node: String? = nil, into output: inout CallGatewayOutput) {
        engine.restore(snapshot)
        restore(devices: snapshot.devices)
        for record in snapshot.connections where record.node == nil || record.node == node { adopt(record, now: now) }
        let onRecord = Set(snapshot.connections.map(\.id))
        let orphans = snapshot.sessions.filter { engine.callOf(session: $0.sessionID) == nil }
        for session in snapshot.sessions where !onRecord.contains(session.connection) {
            engine.connectionLost(session.connection, now: now, out: &output.calls)
        }
        for session in orphans {
            var orphan = session
            orphan.leftAt = now
            orphan.leftReason = "call_ended"
            output.calls.mutations.append(.saveSession(orphan))
        }
        flush(into: &output)
    }

    /// Holds a connection read from the store (at start, or taken over from another node by a
    /// resume), detached, with a fresh resume window from `now`: events sent before are
    /// unknown here, so its `seq` starts above any of them and a resume of it is never complete.
    /// `sessions`, its active sessions (a takeover's), are known from then on: those in calls
    /// another node runs as its sessions elsewhere (its signals are forwarded there).
    public mutating func adopt(_ record: ConnectionRecord, now: Date, sessions: [SessionRecord] = []) {
        let token = UserToken(userID: record.userID.rawValue, issuedAt: record.connectedAt, expiresAt: record.tokenExpiresAt)
        var client = ClientConnection(
            id: record.id, user: record.userID, token: token, resumeToken: record.resumeToken, connectedAt: record.connectedAt, socket: nil,
            detachedAt: now, remoteAddress: "")
        // ms × 1000 stays ahead unless a connection got 1,000 events a millisecond.
        client.nextSeq = UInt64(max(0, now.timeIntervalSince1970 * 1000)) * 1000
        client.restored = true
        if let held = clients[record.id], let socket = held.socket { sockets[socket] = nil }
        clients[record.id] = client
        userClients[record.userID, default: []].insert(record.id)
        let elsewhere = sessions.filter { $0.connection == record.id && $0.isActive && engine.call($0.cid) == nil }
        remoteSessions[record.id] = elsewhere.isEmpty ? nil : Dictionary(elsewhere.map { ($0.sessionID, $0.cid) }, uniquingKeysWith: { first, _ in first })
        wake(by: deadline(of: client))
    }

    /// The earliest time ``tick(now:into:)`` has work, other than idle and auth checks.
    public var nextDeadline: Date? { engine.nextDeadline }
}
