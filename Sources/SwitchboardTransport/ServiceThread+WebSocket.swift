import CLibWebSockets
import SwitchboardCore

extension ServiceThread {
    func handleWebSocket(
        wsi: OpaquePointer, reason: lws_callback_reasons, input: UnsafeMutableRawPointer?, length: Int
    ) -> Int32 {
        switch reason {
        case LWS_CALLBACK_FILTER_PROTOCOL_CONNECTION:
            return filterUpgrade(wsi)
        case LWS_CALLBACK_ESTABLISHED:
            let connection = connection(for: wsi)
            connection.kind = .webSocket
            retime(connection) { $0.established(now: Self.now(), timeouts: timeouts, spread: connection.id.rawValue) }
            mailbox.webSocketOpened(connection.id)
            inbound.append(.opened(connection.id, connection.upgrade ?? WebSocketUpgrade(path: "")))
            return 0
        case LWS_CALLBACK_RECEIVE:
            guard let connection = connectionsByWSI[wsi] else { return -1 }
            connection.timer.heard = true
            return receive(connection, input: input, length: length)
        case LWS_CALLBACK_RECEIVE_PONG:
            connectionsByWSI[wsi]?.timer.heard = true
            return 0
        case LWS_CALLBACK_WS_PEER_INITIATED_CLOSE:
            refuseInvalidCloseCode(input, length: length)
            return 0
        case LWS_CALLBACK_SERVER_WRITEABLE:
            guard let connection = connectionsByWSI[wsi] else { return 0 }
            return writeFrames(connection)
        case LWS_CALLBACK_CLOSED:
            guard let connection = connectionsByWSI[wsi], connection.kind == .webSocket else { return 0 }
            connection.kind = .http
            mailbox.webSocketClosed(connection.id)
            inbound.append(.closed(connection.id))
            return 0
        default:
            return 0
        }
    }

    /// RFC 6455 7.4: a close code of 5000 or more is invalid. lws turns the reserved codes
    /// below 3000 into 1002 when it echoes the close, but not these: the same here, in the
    /// payload lws is about to echo.
    private func refuseInvalidCloseCode(_ input: UnsafeMutableRawPointer?, length: Int) {
        guard let input, length >= 2 else { return }
        let bytes = input.assumingMemoryBound(to: UInt8.self)
        let code = Int(bytes[0]) << 8 | Int(bytes[1])
        guard code >= 5000 else { return }
        bytes[0] = UInt8(CloseCode.protocolError.rawValue >> 8)
        bytes[1] = UInt8(CloseCode.protocolError.rawValue & 0xFF)
    }

    /// Accepts upgrades only on the configured paths (others get 400), with version 13 (others
    /// get 426 naming it) and a well-formed key (16 bytes in base64; others get 400).
    private func filterUpgrade(_ wsi: OpaquePointer) -> Int32 {
        let path = LWSHeaders.copy(wsi, WSI_TOKEN_GET_URI) ?? ""
        let connection = connection(for: wsi)
        if LWSHeaders.copy(wsi, WSI_TOKEN_VERSION) != "13" {
            var response = SwitchboardError(.invalidRequest, "only WebSocket version 13 is served").httpResponse
            response.status = 426
            response.headers.append(("Sec-WebSocket-Version", "13"))
            return refuseUpgrade(connection, response)
        }
        guard Self.isWellFormedKey(LWSHeaders.copy(wsi, WSI_TOKEN_KEY)) else {
            return refuseUpgrade(connection, SwitchboardError(.invalidRequest, "Sec-WebSocket-Key must be 16 bytes in base64").httpResponse)
        }
        guard connection.listener.webSocketPaths.contains(path) else {
            // 404 where WebSockets are served but not at this path; 400 where none are (admin).
            let served = !connection.listener.webSocketPaths.isEmpty
            var response = SwitchboardError(
                served ? .notFound : .invalidRequest,
                served ? "no WebSocket endpoint at \(LogText.escape(path, limit: 80))" : "this listener serves no WebSocket").httpResponse
            response.status = served ? 404 : 400
            return refuseUpgrade(connection, response)
        }
        let headers = LWSHeaders.headers(wsi)
        connection.upgrade = WebSocketUpgrade(
            path: path, query: LWSHeaders.query(wsi), headers: headers,
            remoteAddress: configuration.trustedProxies.clientAddress(peer: connection.remoteAddress, forwardedFor: headers["x-forwarded-for"]))
        return 0
    }

    private func refuseUpgrade(_ connection: LWSConnection, _ response: HTTPResponse) -> Int32 {
        writeClosingResponse(connection, response)
        return 1
    }

    /// 24 characters of base64 ending in `==`: what 16 random bytes encode to.
    static func isWellFormedKey(_ key: String?) -> Bool {
        guard let key, key.utf8.count == 24, key.hasSuffix("==") else { return false }
        return key.utf8.dropLast(2).allSatisfy { ($0 >= 65 && $0 <= 90) || ($0 >= 97 && $0 <= 122) || ($0 >= 48 && $0 <= 57) || $0 == 43 || $0 == 47 }
    }

    private func receive(_ connection: LWSConnection, input: UnsafeMutableRawPointer?, length: Int) -> Int32 {
        let wsi = connection.wsi
        guard !connection.discardingInput else { return 0 }
        if !connection.receivingInProgress {
            connection.receivingInProgress = true
            connection.receivingBinary = lws_frame_is_binary(wsi) != 0
        }
        guard connection.receiving.count + length <= configuration.maxMessageBytes else {
            refuse(connection, .messageTooBig, reason: "message exceeds max_message_bytes")
            return 0
        }
        let final = lws_is_final_fragment(wsi) != 0
        if !final, length > 0 {
            // A partial message waits in memory for the rest: the shared budget must hold it.
            guard partialMessages.reserve(length) else {
                refuse(connection, .tryAgainLater, reason: "server busy: too many partial messages")
                return 0
            }
            connection.reservedPartial += length
        }
        if let input, length > 0 {
            connection.receiving.append(contentsOf: UnsafeRawBufferPointer(start: input, count: length))
        }
        guard final else { return 0 }
        partialMessages.release(connection.reservedPartial)
        connection.reservedPartial = 0
        inbound.append(.message(connection.id, connection.receiving, isBinary: connection.receivingBinary))
        if mailbox.delivered(connection.receiving.count, on: connection.id) {
            lws_rx_flow_control(wsi, 0)  // the application is behind on this socket: let TCP push back
        }
        connection.receiving = []
        connection.receivingInProgress = false
        return 0
    }

    /// Closes with `code` (1009 over `max_message_bytes`, 1013 over the partial-message budget)
    /// through the writable callback, so the close frame goes out even with more of the message
    /// still arriving, reading nothing more from the socket meanwhile.
    private func refuse(_ connection: LWSConnection, _ code: CloseCode, reason: String) {
        connection.discardingInput = true
        partialMessages.release(connection.dropPartialMessage())
        onClose?(code)
        lws_rx_flow_control(connection.wsi, 0)
        let dropped = connection.outbox.reduce(0) { $0 + $1.bytes.count }
        connection.outbox.removeAll()
        mailbox.written(dropped, on: connection.id)
        connection.pendingClose = (code, reason)
        retime(connection) { $0.closing(now: Self.now(), grace: .seconds(2)) }
        lws_callback_on_writable(connection.wsi)
    }

    private func writeFrames(_ connection: LWSConnection) -> Int32 {
        if connection.pingDue {
            connection.pingDue = false
            // A payload is needed: lws 4.1 does not report a pong with an empty payload.
            let start = writeBuffer.stage(Self.pingPayload)
            guard lws_write(connection.wsi, start, Self.pingPayload.count, LWS_WRITE_PING) >= 0 else { return -1 }
            if !connection.outbox.isEmpty || connection.pendingClose != nil { lws_callback_on_writable(connection.wsi) }
            return 0
        }
        var written = 0
        defer { mailbox.written(written, on: connection.id) }
        while let (frame, binary) = connection.outbox.first {
            let start = writeBuffer.stage(frame)
            guard lws_write(connection.wsi, start, frame.count, binary ? LWS_WRITE_BINARY : LWS_WRITE_TEXT) >= 0 else { return -1 }
            connection.outbox.removeFirst()
            written += frame.count
            if lws_send_pipe_choked(connection.wsi) != 0 { break }
        }
        if !connection.outbox.isEmpty {
            lws_callback_on_writable(connection.wsi)
        } else if let close = connection.pendingClose {
            closeReason(connection.wsi, close.code, close.reason)
            return -1
        }
        return 0
    }

    /// What our keep-alive pings carry (echoed in the pong).
    static let pingPayload = Array("sb-ping".utf8)

    func closeReason(_ wsi: OpaquePointer, _ code: CloseCode, _ reason: String) {
        var bytes = Array(reason.utf8.prefix(120))
        lws_close_reason(wsi, lws_close_status(rawValue: UInt32(code.rawValue)), &bytes, bytes.count)
    }
}
