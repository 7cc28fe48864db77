import Dispatch
import Foundation
import SwitchboardCore

extension WebhookDispatcher {
    /// How often old finished deliveries are deleted.
    static let pruneInterval: DispatchTimeInterval = .seconds(60)
    /// Deliveries deleted per transaction; a round deletes chunks until one comes back short.
    static let pruneChunk = 5000

    /// Starts the retention timer on a queue of its own (deleting never holds up deliveries).
    func startPruning() {
        guard settings.retention > .zero else { return }
        let timer = DispatchSource.makeTimerSource(queue: DispatchQueue(label: "switchboard.webhooks.retention", qos: .utility))
        timer.schedule(deadline: .now() + Self.pruneInterval, repeating: Self.pruneInterval, leeway: .seconds(5))
        timer.setEventHandler { [weak self] in
            guard let self else { return }
            ThreadPriority.run(niceness: self.settings.niceness) { _ = self.pruneNow() }
        }
        timer.resume()
        executor.sync { pruneTimer = timer }
    }

    func stopPruning() {
        executor.sync {
            pruneTimer?.cancel()
            pruneTimer = nil
        }
    }

    /// Deletes every delivered or dead delivery older than ``WebhookSettings/retention`` (and
    /// messages left with none), in chunks; returns how many went. Safe from any queue but the
    /// worker's own.
    @discardableResult
    public func pruneNow() -> Int {
        guard settings.retention > .zero else { return 0 }
        let cutoff = wallClock().addingTimeInterval(-settings.retention.seconds)
        var total = 0
        do {
            while true {
                let pruned = try store.pruneWebhooks(createdBefore: cutoff, limit: Self.pruneChunk)
                total += pruned
                if pruned < Self.pruneChunk { break }
            }
        } catch {
            logger.error("could not delete old webhook deliveries; trying again in a minute", metadata: ["error": "\(error)"])
        }
        if total > 0 { logger.debug("old webhook deliveries deleted", metadata: ["deliveries": "\(total)"]) }
        return total
    }
}
