import Foundation
import Logging
import NIOWebSocket
import WSClient

extension SwitchboardClient {
    /// How one socket ended.
    enum SocketOutcome: Sendable {
        /// It authenticated, then closed (with the server's close code, if any).
        case dropped(code: Int?)
        /// It never got `connection.ok`.
        case refused(code: Int?, error: SwitchboardClientError?)
    }

    /// Opens sockets until ``disconnect()``: each drop is followed by a reconnect with backoff
    /// and a resume; an expired token is replaced through the provider first.
    func runLoop() async {
        var attempt = 0
        setState(.connecting)
        while !Task.isCancelled {
            let outcome = await runSocket()
            guard !Task.isCancelled else { break }
            failPending(SwitchboardClientError(.disconnected, "the socket closed before the answer"))
            switch outcome {
            case .dropped(let code):
                attempt = 0
                if code == 4001 || closingError?.code == .tokenExpired, case .failure(let error) = await freshToken() {
                    return stop(error)
                }
            case .refused(_, let error?) where [.tokenExpired].contains(error.code):
                if case .failure(let failure) = await freshToken() { return stop(failure) }
            case .refused(_, let error?) where [.tokenInvalid, .unauthenticated].contains(error.code):
                // A token the server will never take: ask the provider once for another.
                if attempt > 0 { return stop(error) }
                if case .failure(let failure) = await freshToken() { return stop(failure) }
            case .refused:
                break
            }
            if !config.persistingSocketConnection, await !hasActiveCall() {
                setState(.disconnected)
                break
            }
            setState(.reconnecting)
            let delay = config.backoff.delay(attempt: attempt, unit: random())
            attempt += 1
            logger.debug("reconnecting", metadata: ["delay": "\(delay)", "attempt": "\(attempt)"])
            try? await Task.sleep(for: delay)
        }
        runTask = nil
    }

    private func stop(_ error: SwitchboardClientError) {
        logger.error("the client stopped", metadata: ["error": "\(error)"])
        setState(.failed(error))
        resolveConnectWaiters(.failure(error))
        runTask = nil
    }

    /// One socket: the auth frame (with the resume token and last seq when there was a
    /// connection), then frames until it closes.
    private func runSocket() async -> SocketOutcome {
        let (stream, continuation) = AsyncStream<Outbound>.makeStream()
        outbound = continuation
        closingError = nil
        socketAuthenticated = false
        var auth: [String: JSONValue] = ["type": "auth", "token": .string(token.rawValue)]
        if let connection {
            auth["resume_token"] = .string(connection.resumeToken)
            auth["last_seq"] = .number(Double(sequencer.lastSeq))
        }
        continuation.yield(.text(Wire.encode(.object(auth))))
        let pingInterval = config.pingInterval
        let deadline = config.requestTimeout
        let ended = await SocketAttempt.run(url: url.absoluteString, deadline: deadline, logger: logger) { inbound, writer in
            try await withThrowingTaskGroup(of: Void.self) { group in
                group.addTask {
                    for await message in stream {
                        switch message {
                        case .text(let text): try await writer.write(.text(text))
                        case .drop: try await writer.close(.goingAway, reason: "dropped")
                        }
                    }
                }
                group.addTask {
                    while !Task.isCancelled {
                        try await Task.sleep(for: pingInterval)
                        await self.sendPing()
                    }
                }
                group.addTask {
                    // Upgraded, but no connection.ok in time: closed, and tried again.
                    try await Task.sleep(for: deadline)
                    if await !self.socketAuthenticated { try await writer.close(.goingAway, reason: "no answer") }
                }
                for try await message in inbound.messages(maxSize: 16 << 20) {
                    if case .text(let text) = message { await self.received(text) }
                }
                group.cancelAll()
            }
        }
        var closeCode: Int?
        switch ended {
        case .success(let close): closeCode = close.map { Int(UInt16(webSocketErrorCode: $0.closeCode)) }
        case .failure(let error): logger.debug("socket ended", metadata: ["error": "\(error)"])
        case nil: logger.debug("socket abandoned: no answer to the upgrade", metadata: ["after": "\(deadline)"])
        }
        continuation.finish()
        outbound = nil
        return socketAuthenticated ? .dropped(code: closeCode) : .refused(code: closeCode, error: closingError)
    }

    private func sendPing() {
        guard case .connected = connectionState, let outbound else { return }
        let id = nextRequestID
        nextRequestID += 1
        outbound.yield(.text(Wire.encode(["type": "ping", "id": .number(Double(id))])))
    }

    /// Closes the socket as a network drop would, leaving the connection to be resumed (tests).
    func dropSocket() {
        outbound?.yield(.drop)
    }

    /// One frame from the server.
    func received(_ text: String) async {
        let frame: ServerFrame
        do {
            frame = try ServerFrame.parse(text)
        } catch {
            logger.warning("unreadable frame", metadata: ["error": "\(error)"])
            return
        }
        logger.trace("frame", metadata: ["frame": "\(frame.summary)"])
        switch frame {
        case .connectionOK(let info):
            let hadConnection = connection != nil
            let refetch = sequencer.connected(info, hadConnection: hadConnection)
            connection = info
            socketAuthenticated = true
            setState(.connected)
            resolveConnectWaiters(.success(()))
            if refetch { Task { await self.refetchCalls() } }
        case .response(let id?, let data):
            await answered(id, data)
        case .error(let id?, let error):
            resolve(id, .failure(error))
        case .error(nil, let error):
            closingError = error
            if !socketAuthenticated, ![.tokenExpired, .tokenInvalid, .unauthenticated].contains(error.code) {
                resolveConnectWaiters(.failure(error))
            }
        case .response(nil, _), .pong:
            break
        case .event(let event):
            switch sequencer.accept(event.seq) {
            case .duplicate:
                return
            case .gap:
                Task { await self.refetchCalls() }
            case .deliver:
                break
            }
            await dispatch(event)
        }
    }

    /// Hands an event to its call and to the client's listeners.
    private func dispatch(_ event: ServerEvent) async {
        if event.type == "connection.token_expiring" {
            Task { await self.refreshOnLiveConnection() }
        }
        if let cid = event.callCID, let id = CallID(cid: cid) {
            let call = await call(id)
            await MainActor.run { call.apply(event) }
            if event.type == "call.ring" {
                emit(.incomingCall(id, from: event.data["from"]?.stringValue ?? ""))
            }
        }
        emit(.event(event))
        if !config.persistingSocketConnection, ["call.ended", "call.participant_left"].contains(event.type) {
            Task { await self.disconnectIfIdle() }
        }
    }

    /// After events may have been lost: `call.get` for every call this client follows.
    func refetchCalls() async {
        for (id, call) in calls {
            _ = try? await request("call.get", data: ["type": .string(id.type), "id": .string(id.id)], applying: call.applySnapshot)
        }
    }

    /// Whether any call is joined or ringing (with or for this user).
    func hasActiveCall() async -> Bool {
        for call in calls.values {
            let active = await MainActor.run { call.isJoined || call.incomingRing != nil || (call.info?.ringing ?? false) }
            if active { return true }
        }
        return false
    }

    /// Without `persistingSocketConnection`, the socket closes when no call needs it.
    func disconnectIfIdle() async {
        guard !config.persistingSocketConnection, runTask != nil, await !hasActiveCall() else { return }
        await disconnect()
    }
}
