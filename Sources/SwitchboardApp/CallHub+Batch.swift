import Dispatch
import Foundation
import SwitchboardCore

extension CallHub {
    /// Handles a batch of `/v1/connect` socket events with one commit. Call on ``queue``.
    public func receive(_ events: [TransportEvent]) {
        process(events)
    }

    /// Queues socket events from any thread. Everything queued while the hub is busy (most of
    /// all, while a commit runs) is handled as one batch with one commit, up to
    /// ``maximumBatchEvents``: the group commit grows with the load.
    public func enqueue(_ events: [TransportEvent]) {
        let schedule = inbox.withLock { inbox in
            inbox.events += events
            defer { inbox.scheduled = true }
            return !inbox.scheduled
        }
        if schedule { queue.async { self.drainInbox() } }
    }

    /// The most events one batch takes from the inbox (bounds a batch's commit and the wait
    /// of its first request).
    static let maximumBatchEvents = 1024

    private func drainInbox() {
        dispatchPrecondition(condition: .onQueue(queue))
        let (events, more) = inbox.withLock { inbox in
            let taken = Array(inbox.events.prefix(Self.maximumBatchEvents))
            inbox.events.removeFirst(taken.count)
            inbox.scheduled = !inbox.events.isEmpty
            return (taken, inbox.scheduled)
        }
        if more { queue.async { self.drainInbox() } }
        if !events.isEmpty { process(events) }
    }

    /// Handles a batch of `/v1/connect` socket events with one commit, then gives their
    /// inbound credit back to the transport.
    func process(_ events: [TransportEvent]) {
        dispatchPrecondition(condition: .onQueue(queue))
        defer { transport?.processed(events) }
        let parsed = events.map { event -> Result<ClientFrame, ClientFrame.ParseFailure>? in
            guard case .message(_, let bytes, _) = event else { return nil }
            return gateway.parse(bytes)
        }
        preload(zip(events, parsed).compactMap { event, frame in
            guard case .message(let socket, _, _) = event, let frame else { return nil }
            return gateway.needsLoad(frame, on: socket)
        })
        if sharing != nil {
            learnPresence(parsed.compactMap { frame in
                guard case .success(let parsed)? = frame else { return nil }
                return parsed.request
            })
        }
        let placer = placement.placer()
        let newID = self.newID
        batch { gateway, output, now in
            for (event, frame) in zip(events, parsed) {
                switch event {
                case .opened(let socket, let upgrade):
                    let (token, resume) = Self.credentials(upgrade)
                    gateway.socketOpened(socket, token: token, resume: resume, remoteAddress: upgrade.remoteAddress, now: now, into: &output)
                case .message(let socket, let bytes, _):
                    gateway.frameReceived(socket, bytes, parsed: frame ?? gateway.parse(bytes), placer: placer, newID: newID, now: now, into: &output)
                case .closed(let socket):
                    gateway.socketClosed(socket, now: now)
                case .request:
                    break
                }
            }
        }
    }

    /// The token from `Authorization: Bearer …` or `?token=`, and a resume from
    /// `?resume_token=…&last_seq=…`.
    static func credentials(_ upgrade: WebSocketUpgrade) -> (String?, ResumeRequest?) {
        var token = upgrade.query["token"].flatMap { $0.isEmpty ? nil : $0 }
        if let header = upgrade.headers["authorization"], header.lowercased().hasPrefix("bearer ") {
            let value = header.dropFirst("bearer ".count).trimmingCharacters(in: .whitespaces)
            if !value.isEmpty { token = value }
        }
        var resume: ResumeRequest?
        if let resumeToken = upgrade.query["resume_token"], !resumeToken.isEmpty {
            resume = ResumeRequest(token: resumeToken, lastSeq: UInt64(upgrade.query["last_seq"] ?? "") ?? 0)
        }
        return (token, resume)
    }

    /// Loads these calls from the store into the gateway, once claimed; with `forwarding`, the
    /// requests for those another live node holds go to it (``shareCalls(peers:send:)``).
    func preload(_ cids: [CallCID], forwarding: Bool = true) {
        for cid in claim(cids.filter { !gateway.holds($0) }, forwarding: forwarding) where !gateway.holds(cid) {
            do {
                if ownership != nil {
                    // Maybe taken over from another node: with the sessions it left running.
                    if let detail = try store.callDetail(cid, eventLimit: 0) {
                        gateway.adopt(detail.call, members: detail.members, sessions: detail.sessions)
                    }
                } else if let (record, members) = try store.loadCall(cid) {
                    gateway.adopt(record, members: members)
                }
            } catch {
                logger.error("loading a call failed", metadata: ["call.cid": "\(cid)", "error": "\(error)"])
            }
        }
    }

    /// Runs `body` against the gateway, commits its mutations, then sends. When the commit
    /// fails nothing of the batch is sent: the gateway rebuilds its calls from the store (the
    /// truth), every request of the batch is answered `unavailable`, and sockets that
    /// authenticated in it are closed (1013) so their clients retry.
    func batch(_ body: (inout CallGateway, inout CallGatewayOutput, Date) -> Void) {
        var committed = true
        batch(body, committed: &committed)
    }

    func batch(_ body: (inout CallGateway, inout CallGatewayOutput, Date) -> Void, committed: inout Bool) {
        dispatchPrecondition(condition: .onQueue(queue))
        if outOfSync { resync() }
        var output = CallGatewayOutput()
        let now = wallClock()
        body(&gateway, &output, now)
        gateway.addWebhooks(into: &output, now: now, newID: newID)
        gateway.clearRefusals()
        if outOfSync {
            // Memory may be ahead of the store: nothing is committed or answered from it.
            committed = false
            rollBack(output, snapshot: nil)
            return
        }
        guard !output.mutations.isEmpty else {
            finish(output)
            return
        }
        let started = DispatchTime.now()
        do {
            try store.apply(output.mutations)
            metrics.commit.recordNanoseconds(DispatchTime.now().uptimeNanoseconds - started.uptimeNanoseconds)
            handOverWebhooks(output.mutations)
            finish(output)
        } catch {
            logger.error("call state commit failed; batch rolled back", metadata: ["error": "\(error)", "mutations": "\(output.mutations.count)"])
            committed = false
            let snapshot: CallStateSnapshot?
            do {
                snapshot = owned(try store.loadLiveState())
            } catch {
                logger.critical(
                    "the store can be neither written nor read; call requests are refused until it can be read again",
                    metadata: ["error": "\(error)"])
                snapshot = nil
                outOfSync = true
            }
            rollBack(output, snapshot: snapshot)
        }
    }

    /// Rebuilds the calls from the store once it can be read again (after ``outOfSync``).
    private func resync() {
        guard let snapshot = try? store.loadLiveState() else { return }
        let mine = owned(snapshot)
        _ = gateway.rollBack(CallGatewayOutput(), snapshot: mine)
        let placement = self.placement
        gateway.restoreSFUs { placement.current($0) }
        outOfSync = false
        logger.notice("the store can be read again; calls rebuilt from it", metadata: ["calls": "\(snapshot.calls.count)"])
        metrics.update(from: gateway)
    }

    private func rollBack(_ output: CallGatewayOutput, snapshot: CallStateSnapshot?) {
        let orphaned = gateway.rollBack(output, snapshot: snapshot)
        // The batch's placements never reached the directory: calls keep the SFUs it holds.
        let placement = self.placement
        if snapshot != nil { gateway.restoreSFUs { placement.current($0) } }
        let failure = SwitchboardError(.unavailable, "the store did not take the change; try again")
        var commands: [OutboundCommand] = output.responded.map { .send($0.socket, CallGateway.errorFrame($0.id, failure)) }
        for case .close(let socket, let code, let reason) in output.commands { commands.append(.close(socket, code, reason: reason)) }
        commands += orphaned.map { .close($0, .tryAgainLater, reason: "store unavailable") }
        _ = transport?.submit(commands)
        refuseForwards(output, failure)
        // Token checks asked for in the batch still run: their sockets wait for an answer.
        for check in output.tokenChecks { verify(check) }
        metrics.update(from: gateway)
    }

    /// Gives the delivery worker the webhook messages a commit wrote (they are durable now).
    func handOverWebhooks(_ mutations: [CallMutation]) {
        guard let webhooksCommitted else { return }
        let created = PendingWebhook.created(by: mutations)
        if !created.isEmpty { webhooksCommitted(created) }
    }

    /// After the commit: send, hand placements to the directory, verify tokens, count.
    func finish(_ output: CallGatewayOutput) {
        // Counted before anything is sent: a client that saw its answer finds it counted.
        metrics.record(output.calls.metrics, authFailures: output.authFailures, limited: output.limitedRequests)
        if !output.commands.isEmpty, let transport {
            // Refused sockets (full outbox) are closed by the transport with 1008; their client
            // connections keep their events for a resume.
            _ = transport.submit(output.commands)
        }
        let calls = output.calls
        if !calls.placed.isEmpty || !calls.releasedPlacements.isEmpty || !calls.placementRefusals.isEmpty {
            placement.committed(placed: calls.placed, released: calls.releasedPlacements, refusals: calls.placementRefusals)
        }
        for check in output.tokenChecks { verify(check) }
        sendForwards(output)
        if let roomsChanged, touchesRooms(output) { roomsChanged() }
        metrics.update(from: gateway)
    }

    /// Verifies a token off the queue and hands the answer back to the gateway.
    func verify(_ check: TokenCheck) {
        guard let verifier = tokenVerifier else {
            batch { gateway, output, now in
                gateway.tokenChecked(
                    check.socket, purpose: check.purpose, result: .failure(SwitchboardError(.unauthenticated, "token authentication is not configured (auth.api_secret)")),
                    now: now, newID: newID, into: &output)
            }
            return
        }
        Task {
            let result: Result<UserToken, SwitchboardError>
            var namedUser: String?
            do throws(SwitchboardError) {
                result = .success(try await verifier.verify(check.token))
            } catch {
                result = .failure(error)
                namedUser = await verifier.namedUser(ofRefused: check.token)
            }
            queue.async { [namedUser] in
                // Frames that waited behind the check touch calls that may have left memory.
                self.preload(self.gateway.callsToLoad(queuedOn: check.socket))
                if case .success(let token) = result, case .auth(_, let resume) = check.purpose {
                    if let resume { self.takeOver(resume, of: token.userID) }
                    self.learnRings(of: token.userID)
                }
                let placer = self.placement.placer()
                self.batch { gateway, output, now in
                    gateway.tokenChecked(
                        check.socket, purpose: check.purpose, result: result, namedUser: namedUser, placer: placer, now: now, newID: self.newID,
                        into: &output)
                }
            }
        }
    }
}
