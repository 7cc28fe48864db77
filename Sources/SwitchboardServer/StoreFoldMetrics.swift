import CoreMetrics
import Logging
import SwitchboardStore

/// The batch log's folds (ADR 0010) as metrics, and a failed fold in the log: the batches stay
/// in the log, and reads of the call tables answer `unavailable` until a fold succeeds.
enum StoreFoldMetrics {
    static func observe(_ store: SQLiteStore, factory: any MetricsFactory, logger: Logger) {
        let folded = Counter(label: "switchboard_store_folds_total", dimensions: [("outcome", "ok")], factory: factory)
        let failed = Counter(label: "switchboard_store_folds_total", dimensions: [("outcome", "failed")], factory: factory)
        let batches = Counter(label: "switchboard_store_folded_batches_total", factory: factory)
        let duration = CoreMetrics.Timer(label: "switchboard_store_fold_seconds", factory: factory)
        let pending = Gauge(label: "switchboard_store_log_pending_batches", factory: factory)
        store.observeFolds { report in
            duration.recordNanoseconds(Int64(clamping: report.nanoseconds))
            pending.record(report.pendingBatches)
            if let failure = report.failure {
                failed.increment()
                logger.error(
                    "folding the batch log into the tables failed; the batches stay in the log and the next fold retries",
                    metadata: ["error": "\(failure)", "pending_batches": "\(report.pendingBatches)"])
            } else {
                folded.increment()
                batches.increment(by: report.batches)
            }
        }
    }
}
