import CLibWebSockets
import CSwitchboardShims
import SwitchboardCore

/// Accepting, and every connection's deadline: the per-address caps are applied before lws sees
/// a socket, and deadlines live in the thread's ``TimerWheel`` instead of lws's sorted list.
extension ServiceThread {
    /// Accepts every pending connection on `listener`: refuses it at once when its address is
    /// over a cap, otherwise hands it to lws with a handshake deadline.
    func acceptPending(_ listener: BoundListener) {
        var address = [CChar](repeating: 0, count: 64)
        while true {
            let fd = sb_accept_from(listener.fd, &address, address.count)
            if fd < 0 {
                if fd == -EMFILE || fd == -ENFILE {
                    shedWithReserve(listener, errno: -fd)
                } else if fd != -EAGAIN && fd != -EWOULDBLOCK && fd != -EINTR && fd != -ECONNABORTED {
                    logAcceptFailure(errno: -fd)
                }
                return
            }
            let remote = String(decoding: address.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
            // A trusted proxy carries many clients: it is not held to the per-address caps (the
            // clients behind it are, by the address it forwards, in the application's limits).
            let counted = !configuration.trustedProxies.contains(remote)
            if counted, let refusal = gate.admit(listener.role, remote) {
                _ = sb_close(fd)
                if let count = acceptFailures.record(now: Self.now()) {
                    logger.warning("connections refused at accept", metadata: [
                        "reason": "\(refusal == .tooManyPending ? "too many pending handshakes from one address" : "too many connections from one address")",
                        "address": "\(LogText.escape(remote))", "count": "\(count)"])
                }
                continue
            }
            guard let wsi = lws_adopt_socket_vhost(listener.vhost, fd) else {
                if counted { gate.released(listener.role, remote, pending: true) }
                logger.warning("libwebsockets refused an accepted socket")
                continue
            }
            if let existing = connectionsByWSI[wsi] {
                existing.counted = counted  // lws already called back for it during adoption
            } else {
                record(wsi, listener: listener.configuration, address: remote).counted = counted
            }
        }
    }

    /// Out of descriptors: frees the reserve to accept and close one pending connection (so the
    /// listener stops being readable instead of spinning the loop), then takes the reserve back.
    private func shedWithReserve(_ listener: BoundListener, errno: Int32) {
        logAcceptFailure(errno: errno)
        guard reserveDescriptor >= 0 else { return }
        _ = sb_close(reserveDescriptor)
        reserveDescriptor = -1
        let fd = sb_accept(listener.fd)
        if fd >= 0 { _ = sb_close(fd) }
        let reserve = sb_open_reserve()
        reserveDescriptor = reserve >= 0 ? reserve : -1
    }

    private func logAcceptFailure(errno: Int32) {
        guard let count = acceptFailures.record(now: Self.now()) else { return }
        logger.warning("accept failed", metadata: ["errno": "\(errno)", "error": "\(String(cString: sb_strerror(errno)))", "count": "\(count)"])
    }

    /// Moves `connection`'s deadline (through `change`) and files the new one in the wheel; a
    /// connection that stops being pending is settled with the address gate.
    func retime(_ connection: LWSConnection, _ change: (inout ConnectionTimer) -> Void) {
        let wasPending = connection.timer.isPending
        change(&connection.timer)
        if wasPending, !connection.timer.isPending, connection.counted {
            gate.settled(connection.listener.role, connection.remoteAddress)
        }
        timers.schedule(connection.id, at: connection.timer.deadline)
    }

    /// Runs every deadline that has come due: pings, and closes of whatever overstayed.
    func runTimers(_ now: MonotonicTime) {
        for entry in timers.advance(to: now) {
            guard let connection = connections[entry.key], connection.timer.deadline == entry.deadline else { continue }
            switch connection.timer.fire(now: now, timeouts: timeouts) {
            case .none:
                timers.schedule(connection.id, at: connection.timer.deadline)
            case .ping:
                timers.schedule(connection.id, at: connection.timer.deadline)
                connection.pingDue = true
                lws_callback_on_writable(connection.wsi)
            case .close(let reason):
                logger.debug("closing a connection", metadata: ["connection": "\(connection.id)", "reason": "\(reason)"])
                // Synchronous: lws closes without filing a timeout in its sorted list.
                lws_set_timeout(connection.wsi, PENDING_TIMEOUT_USER_OK, LWS_TO_KILL_SYNC)
            }
        }
    }
}
