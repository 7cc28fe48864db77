import Foundation
import SwitchboardCore

extension SFUDirectory {
    /// The SFUs whose health and load Switchboard pulls (kind `janus`), by id.
    public func pollTargets() -> [SFUPollTarget] {
        queue.sync {
            records.values.sorted { $0.id < $1.id }.compactMap { record in
                record.janus.map { SFUPollTarget(id: record.id, janus: $0) }
            }
        }
    }

    /// The result of one poll. An answer counts as a heartbeat with that load (stored, the SFU
    /// fresh from now, a `down` one back to `active`); anything else only records the outcome,
    /// and `placement.stale_after_ms` without an answer marks the SFU down as for a silent
    /// heartbeat SFU. A result for an SFU removed or redefined meanwhile is dropped.
    public func polled(_ target: SFUPollTarget, _ result: SFUPollResult) {
        queue.async { [self] in
            guard var record = records[target.id], record.janus == target.janus, var node = nodes[target.id] else { return }
            lastPolls[target.id] = result
            metrics.polled(result.outcome)
            guard result.outcome == .ok, let load = result.load else { return }
            do {
                _ = try report(load: min(max(0, load), Self.maximumLoad), record: &record, node: &node, at: result.at)
            } catch {
                logger.error("could not store a polled load", metadata: ["sfu.id": "\(target.id)", "error": "\(error)"])
            }
        }
    }

    /// Waits until every ``polled(_:_:)`` handed over before it has been applied.
    public func settle() {
        queue.sync {}
    }
}
