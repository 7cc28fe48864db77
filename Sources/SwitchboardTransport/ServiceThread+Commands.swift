import CLibWebSockets
import SwitchboardCore

extension ServiceThread {
    /// Runs everything the application posted since the last wake-up.
    func executeMailbox() {
        let (commands, controls, resumable) = mailbox.take()
        for command in commands {
            execute(command)
        }
        for id in resumable {
            guard let connection = connections[id], connection.kind == .webSocket, !connection.discardingInput else { continue }
            lws_rx_flow_control(connection.wsi, 1)
        }
        for control in controls {
            switch control {
            case .drain(let code, let seconds): drain(code, seconds: seconds)
            case .stall(let release): release.wait()
            }
        }
    }

    private func execute(_ command: OutboundCommand) {
        guard let connection = connections[command.connection] else { return }
        switch command {
        case .send(_, let frame), .sendBinary(_, let frame):
            guard connection.kind == .webSocket, connection.pendingClose == nil else { return }
            if case .sendBinary = command {
                connection.outbox.append((frame, true))
            } else {
                connection.outbox.append((frame, false))
            }
            lws_callback_on_writable(connection.wsi)
        case .close(_, let code, let reason):
            guard connection.kind == .webSocket, connection.pendingClose == nil else { return }
            connection.pendingClose = (code, reason)
            onClose?(code)
            if reason == Mailbox.overflowReason {
                let dropped = connection.outbox.reduce(0) { $0 + $1.bytes.count }
                connection.outbox.removeAll()
                mailbox.written(dropped, on: connection.id)
                retime(connection) { $0.closing(now: ServiceThread.now(), grace: .seconds(2)) }
            }
            lws_callback_on_writable(connection.wsi)
        case .respond(_, let response):
            guard connection.kind == .http, connection.request != nil else { return }
            connection.response = response
            lws_callback_on_writable(connection.wsi)
        }
    }

    /// Stops accepting and asks every WebSocket to close with `code`; a socket that cannot take
    /// the close frame (its peer does not read) is dropped after `seconds`.
    private func drain(_ code: CloseCode, seconds: Int32) {
        for listener in listeners where listener.role == .client {
            if let wsi = listener.wsi { lws_set_timeout(wsi, PENDING_TIMEOUT_USER_OK, LWS_TO_KILL_ASYNC) }
        }
        let now = ServiceThread.now()
        for connection in connections.values where connection.kind == .webSocket {
            connection.pendingClose = (code, "server shutting down")
            onClose?(code)
            retime(connection) { $0.closing(now: now, grace: .seconds(Int64(max(1, seconds)))) }
            lws_callback_on_writable(connection.wsi)
        }
    }
}
