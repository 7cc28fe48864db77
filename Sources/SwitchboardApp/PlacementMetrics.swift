import CoreMetrics
import SwitchboardCore

/// Placement metrics: decisions by location source, failures by reason, reassignments.
final class PlacementMetrics: Sendable {
    private let bySource: [LocationSource: Counter]
    private let failures: [PlacementCandidate.Rejection?: Counter]
    private let reassignments: Counter
    private let orphaned: Counter
    let heartbeats: Counter

    init(factory: any MetricsFactory) {
        bySource = Dictionary(uniqueKeysWithValues: LocationSource.allCases.map {
            ($0, Counter(label: "switchboard_placements_total", dimensions: [("source", $0.rawValue)], factory: factory))
        })
        var failures: [PlacementCandidate.Rejection?: Counter] = [
            nil: Counter(label: "switchboard_placement_failures_total", dimensions: [("reason", "no_sfus")], factory: factory)
        ]
        for reason in PlacementCandidate.Rejection.allCases {
            failures[reason] = Counter(label: "switchboard_placement_failures_total", dimensions: [("reason", reason.rawValue)], factory: factory)
        }
        self.failures = failures
        reassignments = Counter(label: "switchboard_reassignments_total", factory: factory)
        orphaned = Counter(label: "switchboard_reassignments_failed_total", factory: factory)
        heartbeats = Counter(label: "switchboard_sfu_heartbeats_total", factory: factory)
    }

    /// One count per participant of a placement decision, by the source its location came from
    /// (a decision with no participants counts once as `default`).
    func placed(_ sources: [LocationSource]) {
        for source in sources { bySource[source]?.increment() }
        if sources.isEmpty { bySource[.fallback]?.increment() }
    }

    /// Counts a failed placement by the rejection most SFUs shared.
    func failure(_ rejection: PlacementCandidate.Rejection?) {
        failures[rejection]?.increment()
    }

    func reassigned(_ moves: [Reassignment]) {
        for move in moves {
            if move.to == nil { orphaned.increment() } else { reassignments.increment() }
        }
    }
}
