import Foundation
import SwitchboardCore

extension CallHub: CallAdministration {
    public func listCalls(_ query: CallQuery) throws(SwitchboardError) -> CallPage {
        try storeCall { () throws -> CallPage in try store.listCalls(query) }
    }

    public func callDetail(_ cid: CallCID, eventLimit: Int) throws(SwitchboardError) -> (detail: CallDetail, sfu: SFUAssignment?)? {
        guard let detail = try storeCall({ () throws -> CallDetail? in try store.callDetail(cid, eventLimit: eventLimit) }) else { return nil }
        // A call another node runs (calls on every daemon): its placement, as the store says.
        let sfu = detail.call.isLive ? queue.sync { gateway.engine.call(cid)?.sfu } ?? placement.current(cid) : nil
        return (detail, sfu)
    }

    public func endCall(_ cid: CallCID) throws(SwitchboardError) {
        try administer(.end, cid, forwarding: true)
    }

    public func removeSession(_ session: SessionID, from cid: CallCID) throws(SwitchboardError) {
        try administer(.kick(session), cid, forwarding: true)
    }

    /// Makes an admin change here, or, for a call another live node runs (with `forwarding`,
    /// when this hub shares calls), at that node, waiting for its answer.
    func administer(_ action: ForwardedAdminRequest.Action, _ cid: CallCID, forwarding: Bool) throws(SwitchboardError) {
        if let owner = try load(cid, forwarding: forwarding) {
            return try forwardAdmin(action, cid, to: owner)
        }
        try adminAction { gateway, output, now throws(SwitchboardError) in
            switch action {
            case .end: _ = try gateway.adminEnd(cid, now: now, into: &output)
            case .kick(let session): try gateway.adminKick(session, from: cid, now: now, into: &output)
            }
        }
    }

    /// Brings a call that is not in memory (ended, evicted) in from the store, so admin actions
    /// on it get `call_ended` rather than `call_not_found`; the owner when another live node
    /// runs it and the change goes there (`forwarding`, on a hub that shares calls).
    private func load(_ cid: CallCID, forwarding: Bool) throws(SwitchboardError) -> CallOwner? {
        guard !queue.sync(execute: { gateway.holds(cid) }) else { return nil }
        let (refusal, owner) = queue.sync { () -> (SwitchboardError?, CallOwner?) in
            defer { gateway.clearRefusals() }
            guard claim([cid], forwarding: forwarding).isEmpty else { return (nil, nil) }
            return (gateway.refusedCalls[cid], gateway.forwardedCalls[cid])
        }
        if let refusal { throw refusal }
        if let owner { return owner }
        guard let (record, members) = try storeCall({ () throws -> (call: CallRecord, members: [MemberRecord])? in try store.loadCall(cid) }) else {
            return nil
        }
        queue.sync { gateway.adopt(record, members: members) }
        return nil
    }

    public func connections() -> [ConnectionView] {
        queue.sync { gateway.connectionViews }
    }

    /// Runs an admin change as a batch on the queue; returns once it is committed.
    func adminAction(
        _ body: @escaping (inout CallGateway, inout CallGatewayOutput, Date) throws(SwitchboardError) -> Void
    ) throws(SwitchboardError) {
        let result: Result<Void, SwitchboardError> = queue.sync {
            var failure: SwitchboardError?
            var committed = true
            batch(
                { gateway, output, now in
                    do throws(SwitchboardError) {
                        try body(&gateway, &output, now)
                    } catch {
                        failure = error
                    }
                }, committed: &committed)
            if let failure { return .failure(failure) }
            return committed ? .success(()) : .failure(SwitchboardError(.unavailable, "the store did not take the change"))
        }
        try result.get()
    }

    private func storeCall<T>(_ body: () throws -> T) throws(SwitchboardError) -> T {
        do {
            return try body()
        } catch let error as SwitchboardError {
            throw error
        } catch {
            logger.error("call store read failed", metadata: ["error": "\(error)"])
            throw SwitchboardError(.unavailable, "the store could not be read")
        }
    }
}

extension CallGateway {
    /// Every client connection, as the admin API lists them (attached first, then by id).
    public var connectionViews: [ConnectionView] {
        clients.values.sorted { ($0.socket == nil ? 1 : 0, $0.id) < ($1.socket == nil ? 1 : 0, $1.id) }.map { client in
            ConnectionView(
                id: client.id, user: client.user, attached: client.socket != nil, remoteAddress: client.remoteAddress, connectedAt: client.connectedAt,
                tokenExpiresAt: client.token.expiresAt, detachedAt: client.detachedAt, sessions: engine.sessions(of: client.id).sorted(),
                lastSeq: client.nextSeq - 1)
        }
    }
}

extension CallHub {
    /// SFU failover moved these calls: their participants get `call.sfu_changed`. Call from
    /// any queue but the call hub's own (it waits for the commit).
    public func sfusReassigned(_ moves: [Reassignment], lookup: (CallCID) -> SFUAssignment?) {
        announce(moves.compactMap { move -> (CallCID, SFUAssignment)? in
            guard move.to != nil, let cid = CallCID(cid: move.callID), let sfu = lookup(cid) else { return nil }
            return (cid, sfu)
        })
    }

    /// Announces the failover moves that no `call.sfu_changed` followed
    /// (``PlacementRecord/isAnnounced(lastChange:)``: the daemon stopped between the failover's
    /// commit and the call hub's batch), so every committed move reaches the participants and
    /// its `sfu.call_moved` webhook is written (ADR 0011). Call at start, from any queue but the
    /// hub's; returns the calls announced.
    @discardableResult
    public func announceFailovers(_ placements: [PlacementRecord], lookup: (CallCID) -> SFUAssignment?) -> [CallCID] {
        var unannounced: [(CallCID, SFUAssignment)] = []
        for placement in placements.sorted(by: { $0.callID < $1.callID }) where placement.reason == PlacementRecord.failoverReason {
            guard let cid = CallCID(cid: placement.callID), let sfu = lookup(cid), sfu.id == placement.sfu.rawValue else { continue }
            do {
                if placement.isAnnounced(lastChange: try store.lastEvent(of: cid, type: "call.sfu_changed")) { continue }
            } catch {
                logger.error("could not read a moved call's events; its move is not announced", metadata: ["call.cid": "\(cid)", "error": "\(error)"])
                continue
            }
            unannounced.append((cid, sfu))
        }
        announce(unannounced)
        return unannounced.map(\.0)
    }

    private func announce(_ moves: [(CallCID, SFUAssignment)]) {
        guard !moves.isEmpty else { return }
        queue.sync {
            batch { gateway, output, now in
                for (cid, sfu) in moves { gateway.sfuChanged(cid, to: sfu, now: now, into: &output) }
            }
        }
    }
}
