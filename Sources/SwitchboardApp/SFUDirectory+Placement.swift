import Foundation
import SwitchboardCore

extension SFUDirectory {
    /// The table as a batch of call requests sees it: placement over it is a pure decision
    /// (``SFUTable``), committed in the batch's own transaction, then handed to ``adopt``.
    public func table() -> SFUTable {
        queue.sync { SFUTable(nodes: nodes, hasSFUs: !records.isEmpty, policy: policy, resolver: resolver, now: clock.now(), roomKeys: roomKeys) }
    }

    /// A batch committed: its new placements count as pending load until the SFU's next
    /// heartbeat, ended calls' placements go, refusals are counted. Asynchronous, on the
    /// directory's queue: any read through the directory after this call sees it.
    public func adopt(placed: [PlacementRecord], released: [CallCID], refusals: [PlacementCandidate.Rejection?] = []) {
        queue.async { [self] in adoptOnQueue(placed: placed, released: released, refusals: refusals) }
    }

    private func adoptOnQueue(placed: [PlacementRecord], released: [CallCID], refusals: [PlacementCandidate.Rejection?]) {
        dispatchPrecondition(condition: .onQueue(queue))
        for record in placed {
            placements[record.callID] = record
            nodes[record.sfu]?.pending += max(1, record.locations.count)
            metrics.placed(record.sources)
        }
        for cid in released { placements[cid.cid] = nil }
        for rejection in refusals { metrics.failure(rejection) }
    }

    /// Places one call outside a call batch (tools and tests): the same decision over
    /// ``table()``, `commit` writes the placement in one transaction, then the directory
    /// adopts it. Returns the call's placement, new or kept.
    public func place(
        callID: String, participants hints: [LocationHint], commit: ([CallMutation]) throws -> Void
    ) throws(SwitchboardError) -> PlacementRecord {
        let snapshot = table()
        let current = queue.sync { placements[callID] }
        switch snapshot.decide(callID: callID, participants: hints, current: current?.sfu, earlier: [], at: wallClock()) {
        case .kept:
            return current!
        case .placed(let record, _):
            do { try commit([.savePlacement(record)]) } catch { throw storeFailure(error) }
            queue.sync { adoptOnQueue(placed: [record], released: [], refusals: []) }
            return record
        case .refused(let rejection):
            queue.sync { adoptOnQueue(placed: [], released: [], refusals: [rejection]) }
            throw SwitchboardError(.noSFUAvailable, "no SFU can take this call")
        }
    }

    /// The call's current placement, if any.
    public func placement(of callID: String) -> PlacementRecord? {
        queue.sync { placements[callID] }
    }

    /// Every candidate for these participants (or for an existing call's), with filters and
    /// scores. Changes nothing.
    public func explain(callID: String?, participants hints: [LocationHint]?) throws(SwitchboardError) -> PlacementExplanation {
        try serially { () throws(SwitchboardError) -> PlacementExplanation in
            var locations = hints ?? []
            var current: SFUID?
            if let callID {
                guard let placement = placements[callID] else { throw SwitchboardError(.notFound, "no placement for call \(callID)") }
                current = placement.sfu
                if hints == nil { locations = placement.locations }
            }
            let resolved = locations.map(resolver.resolve)
            let decision = PlacementEngine.decide(participants: resolved, nodes: Array(nodes.values), now: clock.now(), policy: policy)
            return PlacementExplanation(callID: callID, decision: decision, current: current, participants: resolved)
        }
    }

    /// Marks SFUs without a heartbeat for `stale_after` down and moves their calls.
    @discardableResult
    public func checkHealth() -> [Reassignment] {
        queue.sync { checkHealthOnQueue() }
    }

    func checkHealthOnQueue() -> [Reassignment] {
        dispatchPrecondition(condition: .onQueue(queue))
        // A following directory's view is a read behind: the leader fails SFUs over.
        guard !following else { return [] }
        let now = clock.now()
        var moved: [Reassignment] = []
        for (id, node) in nodes.sorted(by: { $0.key < $1.key }) where node.state != .down {
            let since = node.lastHeartbeat ?? registeredAt[id] ?? now
            guard now.since(since) > policy.staleAfter else { continue }
            logger.warning("SFU missed its heartbeats; marking it down", metadata: ["sfu.id": "\(id)"])
            do {
                moved += try failover(id, now: now)
            } catch {
                logger.error("failover failed; will retry", metadata: ["sfu.id": "\(id)", "error": "\(error)"])
            }
        }
        if !moved.isEmpty { onReassigned?(moved) }
        return moved
    }

    /// Moves every call off `dead` in one transaction and marks it down. The calls on it are
    /// those this directory placed and those the store holds: with several daemons, other
    /// nodes placed calls this one never saw (the store's record wins for a call in both).
    func failover(_ dead: SFUID, now: MonotonicTime) throws(SwitchboardError) -> [Reassignment] {
        var candidates = nodes
        candidates[dead]?.state = .down
        var moves: [PlacementRecord] = []
        var result: [Reassignment] = []
        var onDead = placements.filter { $0.value.sfu == dead }
        do {
            for placement in try store.allPlacements() { onDead[placement.callID] = placement.sfu == dead ? placement : nil }
        } catch {
            throw storeFailure(error)
        }
        for placement in onDead.values.sorted(by: { $0.callID < $1.callID }) {
            let resolved = placement.locations.map(resolver.resolve)
            let choice = PlacementEngine.choose(participants: resolved, nodes: Array(candidates.values), now: now, policy: policy)
            result.append(Reassignment(callID: placement.callID, from: dead, to: choice))
            guard let chosen = choice else { continue }
            candidates[chosen]?.pending += max(1, placement.locations.count)
            moves.append(PlacementRecord(
                callID: placement.callID, sfu: chosen, locations: placement.locations, sources: resolved.map(\.source),
                assignedAt: wallClock(), reason: PlacementRecord.failoverReason,
                room: candidates[chosen].flatMap { SFUAssignment($0, cid: placement.callID, keys: roomKeys).room?.id }))
        }
        let webhooks = sfuDownWebhook(dead, moved: moves.count)
        do { try store.failover(down: dead, moves: moves, webhooks: webhooks) } catch { throw storeFailure(error) }
        if let committed = webhookSink?.committed, !webhooks.isEmpty { committed(PendingWebhook.created(by: webhooks)) }
        nodes = candidates
        records[dead]?.state = .down
        for move in moves { placements[move.callID] = move }
        metrics.reassigned(result)
        return result
    }

    /// The `sfu.down` outbox row for the failover of `dead`, when an endpoint takes it.
    func sfuDownWebhook(_ dead: SFUID, moved: Int) -> [CallMutation] {
        guard let routing = webhookSink?.routing else { return [] }
        let endpoints = routing.endpoints(for: .sfuDown)
        guard !endpoints.isEmpty else { return [] }
        let at = CallHub.roundedToMilliseconds(wallClock())
        let milliseconds = Int64((at.timeIntervalSince1970 * 1000).rounded())
        let message = WebhookMessage(
            id: "msg_" + TimeOrderedID.make(milliseconds: UInt64(max(0, milliseconds)), random: (UInt64.random(in: 0...UInt64.max), UInt64.random(in: 0...UInt64.max))),
            type: .sfuDown, createdAt: at, lane: "sfu:" + dead.rawValue, seq: milliseconds,
            data: .object(["sfu_id": .string(dead.rawValue), "calls_moved": .number(Double(moved)), "at": .time(at)]))
        return [.enqueueWebhook(message, endpoints: endpoints)]
    }
}
