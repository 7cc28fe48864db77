import CLibWebSockets
import SwitchboardCore

extension ServiceThread {
    func handleHTTP(
        wsi: OpaquePointer, reason: lws_callback_reasons, input: UnsafeMutableRawPointer?, length: Int
    ) -> Int32 {
        switch reason {
        case LWS_CALLBACK_HTTP:
            return beginRequest(wsi)
        case LWS_CALLBACK_HTTP_BODY:
            guard let connection = connectionsByWSI[wsi], connection.request != nil else { return -1 }
            appendBody(connection, input: input, length: length)
            return 0
        case LWS_CALLBACK_HTTP_BODY_COMPLETION:
            guard let connection = connectionsByWSI[wsi], connection.request != nil else { return -1 }
            finishRequest(connection)
            return 0
        case LWS_CALLBACK_HTTP_WRITEABLE:
            guard let connection = connectionsByWSI[wsi], let response = connection.response else { return 0 }
            return writeResponse(connection, response)
        case LWS_CALLBACK_HTTP_CONFIRM_UPGRADE:
            return confirmUpgrade(wsi, input: input)
        case LWS_CALLBACK_CLOSED_HTTP:
            if let connection = connectionsByWSI[wsi] {
                connection.request = nil
                connection.response = nil
            }
            return 0
        default:
            return 0
        }
    }

    private func beginRequest(_ wsi: OpaquePointer) -> Int32 {
        let connection = connection(for: wsi)
        guard let (method, path) = LWSHeaders.requestLine(wsi) else {
            return Int32(lws_return_http_status(wsi, HTTP_STATUS_METHOD_NOT_ALLOWED.rawValue, nil) != 0 ? -1 : 0)
        }
        let headers = LWSHeaders.headers(wsi)
        connection.request = HTTPRequest(
            method: method, path: path, query: LWSHeaders.query(wsi), headers: headers,
            remoteAddress: configuration.trustedProxies.clientAddress(peer: connection.remoteAddress, forwardedFor: headers["x-forwarded-for"]),
            listener: connection.listener.role)
        connection.requestBodyTooLarge = false
        connection.requestDispatched = false
        connection.closeAfterResponse = false
        connection.response = nil
        retime(connection) { $0.requestStarted(now: Self.now(), timeouts: timeouts) }
        if lws_hdr_fragment_length(wsi, WSI_TOKEN_HTTP_CONTENT_LENGTH, 1) > 0 {
            // Two Content-Length headers: which one frames the body is ambiguous (a request
            // smuggling shape), so the request is refused and the connection closed.
            connection.requestBodyTooLarge = true
            refuseBeforeBody(connection, SwitchboardError(.invalidRequest, "more than one Content-Length header"))
            return 0
        }
        let declared = Int(LWSHeaders.copy(wsi, WSI_TOKEN_HTTP_CONTENT_LENGTH) ?? "") ?? 0
        if declared > connection.listener.maxRequestBodyBytes {
            // Answered before the body is read: the rest of it is discarded and the connection
            // closed after the answer, never parsed as the next request.
            connection.requestBodyTooLarge = true
            refuseBeforeBody(connection, SwitchboardError(.payloadTooLarge, "request body exceeds \(connection.listener.maxRequestBodyBytes) bytes"))
            return 0
        }
        if LWSHeaders.copy(wsi, WSI_TOKEN_HTTP_TRANSFER_ENCODING) != nil {
            // lws 4.1 does not de-chunk request bodies for servers: refuse rather than hang.
            connection.requestBodyTooLarge = true
            refuseBeforeBody(connection, SwitchboardError(.invalidRequest, "chunked request bodies are not supported; send Content-Length"))
            return 0
        }
        // With a body, lws calls HTTP_BODY_COMPLETION; without one it never does.
        if declared == 0 { finishRequest(connection) }
        return 0
    }

    private func appendBody(_ connection: LWSConnection, input: UnsafeMutableRawPointer?, length: Int) {
        guard !connection.requestBodyTooLarge, let input, length > 0 else { return }
        if (connection.request?.body.count ?? 0) + length > connection.listener.maxRequestBodyBytes {
            connection.requestBodyTooLarge = true
            connection.request?.body = []
            return
        }
        connection.request?.body.append(contentsOf: UnsafeRawBufferPointer(start: input, count: length))
    }

    private func finishRequest(_ connection: LWSConnection) {
        guard let request = connection.request, connection.response == nil, !connection.requestDispatched else { return }
        connection.requestDispatched = true
        retime(connection) { $0.requestDispatched(now: Self.now(), timeouts: timeouts) }
        if connection.requestBodyTooLarge {
            respondLocally(connection, SwitchboardError(.payloadTooLarge, "request body exceeds \(connection.listener.maxRequestBodyBytes) bytes").httpResponse)
            return
        }
        inbound.append(.request(connection.id, request))
    }

    private func respondLocally(_ connection: LWSConnection, _ response: HTTPResponse) {
        connection.response = response
        lws_callback_on_writable(connection.wsi)
    }

    /// Answers a request refused on its headers alone and closes the connection once the answer
    /// is written; the body still arriving is dropped.
    private func refuseBeforeBody(_ connection: LWSConnection, _ error: SwitchboardError) {
        connection.requestDispatched = true
        connection.closeAfterResponse = true
        retime(connection) { $0.closing(now: Self.now(), grace: timeouts.handshake) }
        respondLocally(connection, error.httpResponse)
    }

    /// An `Upgrade` header: only `websocket` is served. Anything else (`h2c` above all, which
    /// lws would otherwise switch to with a 101) is answered 400 and the connection closed.
    private func confirmUpgrade(_ wsi: OpaquePointer, input: UnsafeMutableRawPointer?) -> Int32 {
        let requested = input.map { String(cString: $0.assumingMemoryBound(to: CChar.self)) } ?? ""
        if requested.lowercased() == "websocket" { return 0 }
        let connection = connection(for: wsi)
        var response = SwitchboardError(.invalidRequest, "this server does not upgrade to \(LogText.escape(requested, limit: 40))").httpResponse
        response.status = 400
        writeClosingResponse(connection, response)
        return -1
    }

    /// Writes a whole HTTP/1.1 response (`Connection: close`) for a request lws has not treated
    /// as HTTP yet (an upgrade; its own status line would say `HTTP/1.0`) or no longer does (a
    /// raw socket). The caller closes.
    func writeClosingResponse(_ connection: LWSConnection, _ response: HTTPResponse) {
        connection.closeAfterResponse = true
        connection.response = nil
        connection.request = nil
        let bytes = response.closingHTTP11Bytes()
        let start = writeBuffer.stage(bytes)
        _ = lws_write(connection.wsi, start, bytes.count, LWS_WRITE_HTTP_HEADERS)
    }

    func writeResponse(_ connection: LWSConnection, _ response: HTTPResponse) -> Int32 {
        let wsi = connection.wsi
        let isHead = connection.request?.method == "HEAD"
        connection.response = nil
        connection.request = nil
        let headerBytes = 512 + response.headers.reduce(0) { $0 + $1.name.utf8.count + $1.value.utf8.count + 8 }
        let area = writeBuffer.payloadArea(atLeast: headerBytes)
        var cursor: UnsafeMutablePointer<UInt8>? = area.start
        guard lws_add_http_common_headers(wsi, UInt32(response.status), response.contentType, UInt64(response.body.count), &cursor, area.end) == 0
        else { return -1 }
        for header in response.headers {
            let name = header.name.lowercased() + ":"
            let value = Array(header.value.utf8)
            guard lws_add_http_header_by_name(wsi, name, value, Int32(value.count), &cursor, area.end) == 0 else { return -1 }
        }
        if connection.closeAfterResponse {
            let value = Array("close".utf8)
            guard lws_add_http_header_by_name(wsi, "connection:", value, Int32(value.count), &cursor, area.end) == 0 else { return -1 }
        }
        guard lws_finalize_write_http_header(wsi, area.start, &cursor, area.end) == 0 else { return -1 }
        if !response.body.isEmpty, !isHead {
            let start = writeBuffer.stage(response.body)
            guard lws_write(wsi, start, response.body.count, LWS_WRITE_HTTP_FINAL) >= 0 else { return -1 }
        }
        if connection.closeAfterResponse { return -1 }
        guard lws_http_transaction_completed(wsi) == 0 else { return -1 }
        retime(connection) { $0.responded(now: Self.now(), timeouts: timeouts) }
        return 0
    }
}
