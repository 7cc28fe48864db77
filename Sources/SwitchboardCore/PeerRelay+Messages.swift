extension PeerRelay {
    /// A complete frame arrived on a PeerJS socket.
    public mutating func frameReceived(
        _ connection: ConnectionID,
        _ bytes: [UInt8],
        isBinary: Bool,
        now: MonotonicTime,
        into effects: inout [RelayEffect]
    ) {
        guard var socket = sockets[connection] else { return }
        socket.lastSeen = now
        defer { sockets[connection] = socket }
        switch socket.messageBudget.spend(now: now) {
        case .admitted: break
        case .refused:
            stats.rateLimited += 1
            return
        case .flooding:
            stats.rateLimited += 1
            effects.append(.close(connection, .policyViolation, reason: "message flood"))
            return
        case .dropped:
            return
        }
        switch PeerJSInbound.parse(bytes, isBinary: isBinary) {
        case .malformed:
            stats.malformed += 1
            if !socket.malformedBudget.take(now: now) {
                effects.append(.close(connection, .policyViolation, reason: "too many malformed frames"))
            }
        case .ignored:
            stats.ignored += 1
        case .message(let message):
            guard let sender = socket.peer else { return }
            if message.type == .leave, message.destination == nil {
                socket.peer = nil
                if registrations[sender]?.connection == connection { registrations[sender] = nil }
                return
            }
            route(message, from: sender, now: now, into: &effects)
        }
    }

    private mutating func route(
        _ message: PeerJSMessage, from sender: PeerID, now: MonotonicTime, into effects: inout [RelayEffect]
    ) {
        guard message.type != .heartbeat else { return }
        guard let destination = message.destination, !destination.isEmpty else {
            stats.dropped += 1
            return
        }
        if let destinationID = PeerID(destination), let target = registrations[destinationID] {
            let frame = PeerJSOutbound.relay(message, from: sender, to: destination)
            effects.append(.send(target.connection, frame, receipt: DeliveryReceipt(sender: sender, destination: destinationID)))
            stats.relayed[message.type, default: 0] += 1
            return
        }
        guard message.type.isQueuedWhenOffline else {
            stats.dropped += 1
            return
        }
        let frame = PeerJSOutbound.relay(message, from: sender, to: destination)
        // A new attempt (nothing of this sender's still waiting for the destination) is told
        // anew when it expires; the rest of one attempt (trickled candidates) is not.
        if !queues.holds(from: sender, for: destination) { expiryNotices.forget(sender, about: destination) }
        do {
            try queues.enqueue(.init(sender: sender, frame: frame, queuedAt: now), for: destination, limits: configuration)
            stats.queued += 1
        } catch {
            stats.overflowed += 1
            sendExpire(offlinePeer: destination, to: sender, into: &effects)
        }
    }

    /// The transport refused a relayed frame (the destination does not read): the destination's
    /// socket is closed, its id freed, and the sender told with LEAVE.
    public mutating func deliveryFailed(
        _ receipt: DeliveryReceipt, on connection: ConnectionID, now: MonotonicTime, into effects: inout [RelayEffect]
    ) {
        if registrations[receipt.destination]?.connection == connection {
            registrations[receipt.destination] = nil
            sockets[connection]?.peer = nil
        }
        effects.append(.close(connection, .policyViolation, reason: "outbox full"))
        if let senderConnection = registrations[receipt.sender]?.connection {
            effects.append(.send(senderConnection, PeerJSOutbound.leave(peer: receipt.destination, recipient: receipt.sender), receipt: nil))
        }
    }

    func sendExpire(offlinePeer: String, to sender: PeerID, into effects: inout [RelayEffect]) {
        guard let holder = registrations[sender]?.connection else { return }
        effects.append(.send(holder, PeerJSOutbound.expire(offlinePeer: offlinePeer, sender: sender), receipt: nil))
    }
}
