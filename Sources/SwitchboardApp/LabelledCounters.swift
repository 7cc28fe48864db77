import CoreMetrics
import Synchronization

/// One counter metric split by one label: a `Counter` per label value, created on first use
/// (or up front, so a series is exported at zero before anything happens) and reused after.
///
/// Safe from any thread: the cache is behind a `Mutex`, and `Counter` itself is `Sendable`.
public final class LabelledCounters: Sendable {
    /// The metric's name, e.g. `switchboard_closes_total`.
    public let label: String
    /// The one label's name, e.g. `code`.
    public let dimension: String
    private let factory: any MetricsFactory
    private let counters = Mutex<[String: Counter]>([:])

    /// - Parameter precreating: label values whose counters exist from the start.
    public init(_ label: String, by dimension: String, factory: any MetricsFactory, precreating values: [String] = []) {
        self.label = label
        self.dimension = dimension
        self.factory = factory
        for value in values { _ = counter(for: value) }
    }

    /// The counter for `value`, created the first time it is asked for.
    public func counter(for value: String) -> Counter {
        counters.withLock { counters in
            if let existing = counters[value] { return existing }
            let created = Counter(label: label, dimensions: [(dimension, value)], factory: factory)
            counters[value] = created
            return created
        }
    }

    /// Adds `amount` to the counter for `value`.
    public func increment(_ value: String, by amount: Int = 1) {
        counter(for: value).increment(by: amount)
    }
}
