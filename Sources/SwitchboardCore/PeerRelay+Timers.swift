extension PeerRelay {
    /// Periodic sweep: expires queued messages older than `expire_timeout` (one EXPIRE per
    /// sender and destination while the destination stays away, across sweeps), closes sockets silent past `alive_timeout`, and (signed ids)
    /// sockets whose token has expired.
    public mutating func tick(now: MonotonicTime, into effects: inout [RelayEffect]) {
        expireQueuedMessages(now: now, into: &effects)
        closeSilentSockets(now: now, into: &effects)
    }

    private mutating func expireQueuedMessages(now: MonotonicTime, into effects: inout [RelayEffect]) {
        let deadline = now.advanced(by: .zero - configuration.expireTimeout)
        let expired = queues.removeExpired(queuedAtOrBefore: deadline)
        guard !expired.isEmpty else { return }
        stats.expired += expired.count
        for (destination, entry) in expired {
            // A browser's OFFER and its trickled CANDIDATEs expire in different sweeps: the
            // sender's socket hears of the absent destination once.
            guard let holder = registrations[entry.sender]?.connection,
                expiryNotices.shouldTell(entry.sender, on: holder, about: destination, isCurrent: { registrations[$0]?.connection == $1 })
            else { continue }
            stats.expireNotices += 1
            sendExpire(offlinePeer: destination, to: entry.sender, into: &effects)
        }
    }

    private mutating func closeSilentSockets(now: MonotonicTime, into effects: inout [RelayEffect]) {
        let deadline = now.advanced(by: .zero - configuration.aliveTimeout)
        for (connection, socket) in sockets {
            let silent = socket.lastSeen < deadline
            let expired = socket.tokenExpiresAt.map { $0 <= now } ?? false
            guard silent || expired else { continue }
            sockets[connection] = nil
            if silent { stats.timedOut += 1 }
            if let peer = socket.peer, registrations[peer]?.connection == connection {
                registrations[peer] = nil
                _ = queues.drain(peer.rawValue)
            }
            if silent {
                effects.append(.close(connection, .normal, reason: "alive timeout"))
            } else {
                effects.append(.send(connection, PeerJSOutbound.error("Token expired"), receipt: nil))
                effects.append(.close(connection, .policyViolation, reason: "token expired"))
            }
        }
    }
}
