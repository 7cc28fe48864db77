import Foundation
import SwitchboardCore

extension SFUDirectory {
    /// The call's SFU: the one it already has (sticky, unless that SFU is down or gone), or the
    /// best for these participants, committed before it is returned.
    public func place(callID: String, participants hints: [LocationHint]) throws(SwitchboardError) -> PlacementRecord {
        try serially { () throws(SwitchboardError) -> PlacementRecord in
            if let existing = placements[callID], let node = nodes[existing.sfu], node.state != .down { return existing }
            let now = clock.now()
            let resolved = hints.map(resolver.resolve)
            guard let chosen = PlacementEngine.choose(participants: resolved, nodes: Array(nodes.values), now: now, policy: policy) else {
                metrics.failure(PlacementEngine.decide(participants: resolved, nodes: Array(nodes.values), now: now, policy: policy))
                throw SwitchboardError(.noSFUAvailable, "no SFU can take this call")
            }
            let record = PlacementRecord(
                callID: callID, sfu: chosen, locations: hints, sources: resolved.map(\.source), assignedAt: wallClock(), reason: "placed")
            do { try store.savePlacement(record) } catch { throw storeFailure(error) }
            placements[callID] = record
            nodes[chosen]?.pending += max(1, hints.count)
            metrics.placed(resolved)
            return record
        }
    }

    /// The call ended: its placement is forgotten.
    public func release(callID: String) throws(SwitchboardError) {
        try serially { () throws(SwitchboardError) in
            guard placements[callID] != nil else { return }
            do { try store.deletePlacement(callID: callID) } catch { throw storeFailure(error) }
            placements[callID] = nil
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

    /// Moves every call off `dead` in one transaction and marks it down.
    func failover(_ dead: SFUID, now: MonotonicTime) throws(SwitchboardError) -> [Reassignment] {
        var candidates = nodes
        candidates[dead]?.state = .down
        var moves: [PlacementRecord] = []
        var result: [Reassignment] = []
        for placement in placements.values.filter({ $0.sfu == dead }).sorted(by: { $0.callID < $1.callID }) {
            let resolved = placement.locations.map(resolver.resolve)
            let choice = PlacementEngine.choose(participants: resolved, nodes: Array(candidates.values), now: now, policy: policy)
            result.append(Reassignment(callID: placement.callID, from: dead, to: choice))
            guard let chosen = choice else { continue }
            candidates[chosen]?.pending += max(1, placement.locations.count)
            moves.append(PlacementRecord(
                callID: placement.callID, sfu: chosen, locations: placement.locations, sources: resolved.map(\.source),
                assignedAt: wallClock(), reason: "failover"))
        }
        do { try store.failover(down: dead, moves: moves) } catch { throw storeFailure(error) }
        nodes = candidates
        records[dead]?.state = .down
        for move in moves { placements[move.callID] = move }
        metrics.reassigned(result)
        return result
    }
}
