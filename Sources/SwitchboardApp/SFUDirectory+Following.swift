import Dispatch
import Foundation
import SwitchboardCore

/// The SFU directory of a node that does not poll (ADR 0012, step 3.4): one node, the leader,
/// polls the SFUs, takes their heartbeats and fails their calls over, and writes all of it to
/// the store; every other node's directory follows the store, so it places the calls it runs
/// on the same health and load. A following directory never checks health itself: it would
/// fail an SFU over on a view a read behind.
extension SFUDirectory {
    /// Reads the SFU table and the placements from the store and takes them as they are. An
    /// SFU's freshness comes from its stored last heartbeat, moved onto this node's clock by
    /// its age; its load counted pending here stays until the store shows a newer heartbeat.
    public func refreshFromStore() throws(SwitchboardError) {
        let stored: [SFURecord], placed: [PlacementRecord]
        do {
            stored = try store.allSFUs()
            placed = try store.allPlacements()
        } catch {
            throw storeFailure(error)
        }
        queue.sync { follow(stored, placed) }
    }

    private func follow(_ stored: [SFURecord], _ placed: [PlacementRecord]) {
        dispatchPrecondition(condition: .onQueue(queue))
        following = true
        let now = clock.now(), wallNow = wallClock()
        var followed: [SFUID: SFUNode] = [:]
        for record in stored {
            guard var node = Self.node(from: record) else { continue }
            if let at = record.lastHeartbeatAt {
                let age = max(0, wallNow.timeIntervalSince(at))
                node.lastHeartbeat = now.advanced(by: .zero - .milliseconds(Int64((age * 1000).rounded())))
            }
            if records[record.id]?.lastHeartbeatAt == record.lastHeartbeatAt, let previous = nodes[record.id] {
                node.pending = previous.pending
            }
            followed[record.id] = node
            if registeredAt[record.id] == nil { registeredAt[record.id] = now }
        }
        records = Dictionary(uniqueKeysWithValues: stored.filter { followed[$0.id] != nil }.map { ($0.id, $0) })
        nodes = followed
        registeredAt = registeredAt.filter { followed[$0.key] != nil }
        placements = Dictionary(placed.map { ($0.callID, $0) }, uniquingKeysWith: { _, last in last })
    }

    /// Follows the store every `interval` from now until ``stop()`` (reads off the directory's
    /// queue; a failed read keeps the last view and is logged).
    public func followStore(every interval: Duration) {
        let milliseconds = max(1, Int(clamping: interval.milliseconds))
        let timer = DispatchSource.makeTimerSource(queue: DispatchQueue(label: "switchboard.placement.follow", qos: .utility))
        timer.schedule(deadline: .now(), repeating: .milliseconds(milliseconds), leeway: .milliseconds(milliseconds / 10))
        timer.setEventHandler { [weak self] in
            guard let self else { return }
            do throws(SwitchboardError) {
                try refreshFromStore()
            } catch {
                logger.warning("could not read the SFU table from the store; placing on the last view", metadata: ["error": "\(error)"])
            }
        }
        queue.sync {
            healthTimer?.cancel()
            healthTimer = timer
        }
        timer.resume()
    }

    /// Whether the directory follows the store (not the leader's).
    public var isFollowing: Bool { queue.sync { following } }

    /// Reads the placements from the store (the leader of daemons that all run calls: other
    /// nodes place calls too). The SFUs' health stays this directory's own.
    public func refreshPlacementsFromStore() throws(SwitchboardError) {
        let placed: [PlacementRecord]
        do { placed = try store.allPlacements() } catch { throw storeFailure(error) }
        queue.sync { placements = Dictionary(placed.map { ($0.callID, $0) }, uniquingKeysWith: { _, last in last }) }
    }

    /// Stops following the store (this node leads now): the view is read once more, then
    /// ``start(onReassigned:)`` checks health from it.
    public func stopFollowing() {
        queue.sync {
            healthTimer?.cancel()
            healthTimer = nil
        }
        do throws(SwitchboardError) {
            try refreshFromStore()
        } catch {
            logger.warning("could not read the SFU table from the store on taking the lead", metadata: ["error": "\(error)"])
        }
        queue.sync { following = false }
    }
}
