extension PeerRelay {
    /// A PeerJS socket finished its WebSocket upgrade with these (URL-decoded) query parameters.
    ///
    /// Runs the PeerJS checks in order (parameters, key, signed id when required, id taken,
    /// concurrent limit); on success registers the id, sends OPEN and then everything queued
    /// for the id. `tokenSubject` is the user of the `token` parameter when the host verified it
    /// as a signed user token (`nil` otherwise), and `tokenExpiresAt` when that token expires:
    /// with signed ids required, the socket is closed then (1008 after an ERROR frame).
    public mutating func connectionOpened(
        _ connection: ConnectionID,
        query: [String: String],
        tokenSubject: String? = nil,
        tokenExpiresAt: MonotonicTime? = nil,
        now: MonotonicTime,
        into effects: inout [RelayEffect]
    ) {
        sockets[connection] = Socket(
            peer: nil,
            lastSeen: now,
            malformedBudget: TokenBucket(
                rate: configuration.malformedRate, burst: configuration.malformedBurst, now: now),
            messageBudget: MessageBudget(rate: configuration.messageRate, burst: configuration.messageBurst, now: now)
        )
        guard let key = query["key"], !key.isEmpty, let token = query["token"], !token.isEmpty,
            let rawID = query["id"], !rawID.isEmpty
        else {
            return refuse(connection, PeerJSOutbound.error(PeerJSOutbound.ErrorText.missingParameters), "missing_parameters", into: &effects)
        }
        guard key == configuration.key else {
            return refuse(connection, PeerJSOutbound.error(PeerJSOutbound.ErrorText.invalidKey), "invalid_key", into: &effects)
        }
        guard let id = PeerID(rawID) else {
            return refuse(connection, PeerJSOutbound.error("Invalid id"), "invalid_id", into: &effects)
        }
        if configuration.requireSignedIDs, tokenSubject != rawID {
            return refuse(connection, PeerJSOutbound.error(PeerJSOutbound.ErrorText.invalidToken), "invalid_token", into: &effects)
        }
        if let existing = registrations[id] {
            guard existing.token == token else {
                return refuse(connection, PeerJSOutbound.idTaken, "id_taken", into: &effects)
            }
            registrations[id]?.connection = connection
        } else {
            guard registrations.count < configuration.concurrentLimit else {
                return refuse(connection, PeerJSOutbound.error(PeerJSOutbound.ErrorText.concurrentLimit), "concurrent_limit", code: .tryAgainLater, into: &effects)
            }
            registrations[id] = Registration(token: token, connection: connection)
        }
        sockets[connection]?.peer = id
        if configuration.requireSignedIDs { sockets[connection]?.tokenExpiresAt = tokenExpiresAt }
        effects.append(.send(connection, PeerJSOutbound.open, receipt: nil))
        expiryNotices.arrived(id.rawValue)
        for entry in queues.drain(id.rawValue) {
            effects.append(.send(connection, entry.frame, receipt: nil))
            stats.deliveredFromQueue += 1
        }
    }

    private mutating func refuse(
        _ connection: ConnectionID,
        _ frame: [UInt8],
        _ reason: String,
        code: CloseCode = .policyViolation,
        into effects: inout [RelayEffect]
    ) {
        stats.refused[reason, default: 0] += 1
        effects.append(.send(connection, frame, receipt: nil))
        effects.append(.close(connection, code, reason: reason))
    }
}
