/// Chooses an SFU for a call: pure, deterministic, brute force over the table.
///
/// Hard filters: state active, a heartbeat within `stale_after`, and room for the call's
/// participants counting pending assignments. The score is the worst participant's RTT
/// (minimax), raised by load and divided by the SFU's weight; equal scores are ordered by a
/// hash of the id and the policy's seed.
public enum PlacementEngine {
    public static func decide(
        participants: [ResolvedLocation], nodes: [SFUNode], now: MonotonicTime, policy: PlacementPolicy
    ) -> PlacementDecision {
        let incoming = max(1, participants.count)
        let candidates = nodes.map { candidate($0, participants: participants, incoming: incoming, now: now, policy: policy) }
        let eligible = candidates.filter { $0.score != nil }.sorted { before($0, $1, seed: policy.seed) }
        let rejected = candidates.filter { $0.score == nil }.sorted { $0.sfu < $1.sfu }
        return PlacementDecision(chosen: eligible.first?.sfu, candidates: eligible + rejected)
    }

    /// The SFU ``decide(participants:nodes:now:policy:)`` would choose, in one pass without
    /// building the explanation: what placing a call uses.
    public static func choose(participants: [ResolvedLocation], nodes: [SFUNode], now: MonotonicTime, policy: PlacementPolicy) -> SFUID? {
        let incoming = max(1, participants.count)
        var best: (score: Double, key: UInt64, id: SFUID)?
        for node in nodes where rejection(node, incoming: incoming, now: now, policy: policy) == nil {
            let score = score(node, worstRTT: worstRTT(node, participants, policy), incoming: incoming, policy: policy)
            let key = tieKey(node.id, seed: policy.seed)
            if let current = best, (current.score, current.key, current.id) <= (score, key, node.id) { continue }
            best = (score, key, node.id)
        }
        return best?.id
    }

    static func worstRTT(_ node: SFUNode, _ participants: [ResolvedLocation], _ policy: PlacementPolicy) -> Double {
        guard !participants.isEmpty else { return policy.baseRTT }
        var worst = 0.0
        for participant in participants {
            let rtt = participant.rtts[node.id] ?? policy.estimatedRTT(kilometers: participant.point.distanceKilometers(to: node.location))
            worst = max(worst, rtt)
        }
        return worst
    }

    static func score(_ node: SFUNode, worstRTT: Double, incoming: Int, policy: PlacementPolicy) -> Double {
        let utilization = Double(node.effectiveLoad.addingSaturating(incoming)) / Double(max(1, node.capacity))
        return worstRTT * (1 + policy.loadWeight * utilization * utilization) / max(node.weight, 0.001)
    }

    static func candidate(
        _ node: SFUNode, participants: [ResolvedLocation], incoming: Int, now: MonotonicTime, policy: PlacementPolicy
    ) -> PlacementCandidate {
        let worstDistance = participants.map { $0.point.distanceKilometers(to: node.location) }.max() ?? 0
        let worstRTT = worstRTT(node, participants, policy)
        let utilization = Double(node.effectiveLoad.addingSaturating(incoming)) / Double(max(1, node.capacity))
        let rejection = rejection(node, incoming: incoming, now: now, policy: policy)
        let score = rejection == nil ? score(node, worstRTT: worstRTT, incoming: incoming, policy: policy) : nil
        return PlacementCandidate(
            sfu: node.id, url: node.url, region: node.region, worstDistanceKilometers: worstDistance, worstRTT: worstRTT,
            load: node.effectiveLoad, capacity: node.capacity, utilization: utilization, rejection: rejection, score: score)
    }

    static func rejection(_ node: SFUNode, incoming: Int, now: MonotonicTime, policy: PlacementPolicy) -> PlacementCandidate.Rejection? {
        switch node.state {
        case .down: return .down
        case .draining: return .draining
        case .active: break
        }
        guard let heartbeat = node.lastHeartbeat, now.since(heartbeat) <= policy.staleAfter else { return .stale }
        guard node.effectiveLoad.addingSaturating(incoming) <= node.capacity else { return .full }
        return nil
    }

    static func before(_ lhs: PlacementCandidate, _ rhs: PlacementCandidate, seed: UInt64) -> Bool {
        let left = lhs.score ?? .infinity
        let right = rhs.score ?? .infinity
        if left != right { return left < right }
        let (leftKey, rightKey) = (tieKey(lhs.sfu, seed: seed), tieKey(rhs.sfu, seed: seed))
        return leftKey != rightKey ? leftKey < rightKey : lhs.sfu < rhs.sfu
    }

    /// FNV-1a of the id, mixed with the seed: a stable, seed-dependent order.
    static func tieKey(_ id: SFUID, seed: UInt64) -> UInt64 {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325 ^ seed
        for byte in id.rawValue.utf8 {
            hash ^= UInt64(byte)
            hash = hash &* 0x0000_0100_0000_01B3
        }
        return hash
    }
}
