import CLibWebSockets
import CSwitchboardShims
import SwitchboardCore

/// Requests lws does not serve as HTTP. lws's header parser answers a method it does not know
/// (TRACE, QUERY, …) itself, with an HTML 403, unless the vhost has
/// `LWS_SERVER_OPTION_FALLBACK_TO_APPLY_LISTEN_ACCEPT_CONFIG`: then it hands the connection over
/// as a raw socket (`RAW_ADOPT`, then `RAW_RX` with the bytes of its last read), as it always
/// does after a `CONNECT` request. Here the request line is read (at most
/// ``RequestLine/maxLength`` bytes, within the connection's deadline) and goes to the
/// application as a request without headers or body, which its routers answer 405 (with
/// `Allow`) or 404; a line that cannot be read is answered 400. The answer is whole HTTP/1.1
/// with `Connection: close`; then the sending side is shut and whatever the peer still sends is
/// dropped until it closes (so the answer is not lost to a reset), for at most
/// ``rawDrainLimit`` bytes and the handshake timeout.
extension ServiceThread {
    /// The most bytes read and dropped past a request line before the socket is dropped.
    static let rawDrainLimit = 65536

    func handleRawRequest(wsi: OpaquePointer, reason: lws_callback_reasons, input: UnsafeMutableRawPointer?, length: Int) -> Int32 {
        switch reason {
        case LWS_CALLBACK_RAW_ADOPT:
            let connection = connection(for: wsi)
            connection.request = nil
            connection.response = nil
            connection.requestLine = []
            return 0
        case LWS_CALLBACK_RAW_RX:
            guard let connection = connectionsByWSI[wsi] else { return -1 }
            return readRequestLine(connection, input: input, length: length)
        case LWS_CALLBACK_RAW_WRITEABLE:
            guard let connection = connectionsByWSI[wsi], let response = connection.response else { return 0 }
            writeClosingResponse(connection, response)
            // Left to send: lws sends it before it closes. Otherwise the peer reads the end.
            if lws_send_pipe_choked(wsi) != 0 || sb_shutdown_write(lws_get_socket_fd(wsi)) != 0 { return -1 }
            retime(connection) { $0.closing(now: Self.now(), grace: timeouts.handshake) }
            return 0
        default:
            return 0
        }
    }

    private func readRequestLine(_ connection: LWSConnection, input: UnsafeMutableRawPointer?, length: Int) -> Int32 {
        guard var line = connection.requestLine else {
            connection.droppedBytes += length
            return connection.droppedBytes > Self.rawDrainLimit ? -1 : 0
        }
        if let input, length > 0 {
            line.append(contentsOf: UnsafeRawBufferPointer(start: input, count: min(length, RequestLine.maxLength - line.count)))
        }
        switch RequestLine.read(line) {
        case .incomplete:
            connection.requestLine = line
        case .malformed(let reason):
            connection.requestLine = nil
            answer(connection, SwitchboardError(.invalidRequest, reason).httpResponse)
        case .line(let requestLine):
            connection.requestLine = nil
            // lws parses these itself: one here means the line was read from inside its method
            // (lws passes only its last read, and the method began in an earlier one).
            if LWSHeaders.methods.contains(where: { $0.name == requestLine.method.uppercased() }) {
                answer(connection, SwitchboardError(.invalidRequest, "the request line came cut inside its method; send it in one piece").httpResponse)
                return 0
            }
            let request = HTTPRequest(
                method: requestLine.method, path: requestLine.path,
                remoteAddress: configuration.trustedProxies.clientAddress(peer: connection.remoteAddress, forwardedFor: nil),
                listener: connection.listener.role)
            connection.request = request
            connection.requestDispatched = true
            retime(connection) { $0.requestDispatched(now: Self.now(), timeouts: timeouts) }
            inbound.append(.request(connection.id, request))
        }
        return 0
    }

    /// Answers without the application.
    private func answer(_ connection: LWSConnection, _ response: HTTPResponse) {
        connection.response = response
        retime(connection) { $0.closing(now: Self.now(), grace: timeouts.handshake) }
        lws_callback_on_writable(connection.wsi)
    }
}
