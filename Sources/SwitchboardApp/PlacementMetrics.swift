import CoreMetrics
import SwitchboardCore

/// Placement metrics: decisions by location source, failures by reason, reassignments.
final class PlacementMetrics: Sendable {
    private let bySource: LabelledCounters
    private let failures: LabelledCounters
    private let reassignments: Counter
    private let orphaned: Counter
    let heartbeats: Counter
    private let polls: LabelledCounters

    init(factory: any MetricsFactory) {
        bySource = LabelledCounters(
            "switchboard_placements_total", by: "source", factory: factory, precreating: LocationSource.allCases.map(\.rawValue))
        failures = LabelledCounters(
            "switchboard_placement_failures_total", by: "reason", factory: factory,
            precreating: [Self.noSFUs] + PlacementCandidate.Rejection.allCases.map(\.rawValue))
        reassignments = Counter(label: "switchboard_reassignments_total", factory: factory)
        orphaned = Counter(label: "switchboard_reassignments_failed_total", factory: factory)
        heartbeats = Counter(label: "switchboard_sfu_heartbeats_total", factory: factory)
        polls = LabelledCounters(
            "switchboard_sfu_polls_total", by: "outcome", factory: factory, precreating: SFUPollResult.Outcome.allCases.map(\.rawValue))
    }

    /// One poll of a pulled SFU, by how it ended.
    func polled(_ outcome: SFUPollResult.Outcome) {
        polls.increment(outcome.rawValue)
    }

    /// One count per participant of a placement decision, by the source its location came from
    /// (a decision with no participants counts once as `default`).
    func placed(_ sources: [LocationSource]) {
        for source in sources { bySource.increment(source.rawValue) }
        if sources.isEmpty { bySource.increment(LocationSource.fallback.rawValue) }
    }

    /// Counts a failed placement by the rejection most SFUs shared.
    func failure(_ rejection: PlacementCandidate.Rejection?) {
        failures.increment(rejection?.rawValue ?? Self.noSFUs)
    }

    /// The failure reason when there was no SFU to reject.
    private static let noSFUs = "no_sfus"

    func reassigned(_ moves: [Reassignment]) {
        for move in moves {
            if move.to == nil { orphaned.increment() } else { reassignments.increment() }
        }
    }
}
