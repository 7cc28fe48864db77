import CoreMetrics
import Dispatch
import Foundation
import Logging
import SwitchboardCore

/// The location table and call placements at run time: owns every ``SFUNode`` and placement,
/// runs the pure ``PlacementEngine``, and commits each change to the ``SFUStore`` before it
/// answers.
///
/// Invariant behind `@unchecked Sendable`: every stored `var` is touched only on `queue`.
public final class SFUDirectory: @unchecked Sendable {
    public let queue = DispatchQueue(label: "switchboard.placement")
    let store: any SFUStore
    let clock: any MonotonicClockSource
    let wallClock: @Sendable () -> Date
    let logger: Logger
    let metrics: PlacementMetrics
    var policy: PlacementPolicy
    var resolver: LocationResolver
    var records: [SFUID: SFURecord] = [:]
    var nodes: [SFUID: SFUNode] = [:]
    /// When each node entered the table in this process: staleness counts from here until its first heartbeat.
    var registeredAt: [SFUID: MonotonicTime] = [:]
    var placements: [String: PlacementRecord] = [:]
    /// Pulled SFUs: how each one's last poll ended.
    var lastPolls: [SFUID: SFUPollResult] = [:]
    /// The directory's one timer: the health check, or, when following, the store's reads.
    var healthTimer: (any DispatchSourceTimer)?
    /// Set once the directory follows the store (``refreshFromStore()``): it checks no health.
    var following = false
    /// Makes the rooms and tokens of calls on SFUs with rooms (Janus).
    public let roomKeys: SFURoomKeys?
    var onReassigned: (@Sendable ([Reassignment]) -> Void)?
    /// Which endpoints take `sfu.down`, and the delivery worker's inbox; set before ``start``.
    var webhookSink: (routing: WebhookRouting, committed: @Sendable ([PendingWebhook]) -> Void)?

    /// Loads the table and placements from the store.
    public init(
        store: any SFUStore, policy: PlacementPolicy, resolver: LocationResolver,
        clock: any MonotonicClockSource = SystemMonotonicClock(), wallClock: @escaping @Sendable () -> Date = { Date() },
        metricsFactory: any MetricsFactory = NOOPMetricsHandler.instance, roomKeys: SFURoomKeys? = nil, logger: Logger
    ) throws {
        self.roomKeys = roomKeys
        self.store = store
        self.policy = policy
        self.resolver = resolver
        self.clock = clock
        self.wallClock = wallClock
        self.logger = logger
        self.metrics = PlacementMetrics(factory: metricsFactory)
        let now = clock.now()
        for record in try store.allSFUs() {
            guard let node = Self.node(from: record) else { continue }
            records[record.id] = record
            nodes[record.id] = node
            registeredAt[record.id] = now
        }
        for placement in try store.allPlacements() { placements[placement.callID] = placement }
    }

    /// Starts the periodic health check (every quarter of `stale_after`). `onReassigned` hears
    /// about every call moved off a failed SFU (the call layer tells its participants).
    /// Writes an `sfu.down` message with each failover for the endpoints `routing` names and
    /// hands it to `committed` after the commit. Call before ``start(onReassigned:)``.
    public func sendWebhooks(_ routing: WebhookRouting, to committed: @escaping @Sendable ([PendingWebhook]) -> Void) {
        queue.sync { webhookSink = (routing, committed) }
    }

    public func start(onReassigned: (@Sendable ([Reassignment]) -> Void)? = nil) {
        queue.sync {
            self.onReassigned = onReassigned
            let interval = max(50, policy.staleAfter.milliseconds / 4)
            let timer = DispatchSource.makeTimerSource(queue: queue)
            timer.schedule(deadline: .now() + .milliseconds(Int(interval)), repeating: .milliseconds(Int(interval)))
            timer.setEventHandler { [weak self] in _ = self?.checkHealthOnQueue() }
            timer.resume()
            healthTimer = timer
        }
    }

    public func stop() {
        queue.sync {
            healthTimer?.cancel()
            healthTimer = nil
            onReassigned = nil
        }
    }

    static func node(from record: SFURecord) -> SFUNode? {
        guard let location = record.location else { return nil }
        return SFUNode(
            id: record.id, url: record.url, region: record.region, location: location, capacity: record.capacity,
            weight: record.weight, state: record.state, lastHeartbeat: nil,
            reportedLoad: min(max(0, record.reportedLoad), SFUDirectory.maximumLoad), kind: record.kind)
    }

    func isFresh(_ node: SFUNode, now: MonotonicTime) -> Bool {
        guard let heartbeat = node.lastHeartbeat else { return false }
        return now.since(heartbeat) <= policy.staleAfter
    }

    func view(_ id: SFUID, now: MonotonicTime) -> SFUView? {
        guard let record = records[id] else { return nil }
        let node = nodes[id]
        let calls = placements.values.filter { $0.sfu == id }.count
        return SFUView(record: record, node: node, fresh: node.map { isFresh($0, now: now) } ?? false, calls: calls, lastPoll: lastPolls[id])
    }
}

extension SFUDirectory {
    /// Runs `body` on the queue, keeping its typed error.
    func serially<T>(_ body: () throws(SwitchboardError) -> T) throws(SwitchboardError) -> T {
        let result: Result<T, SwitchboardError> = queue.sync { Result(catching: body) }
        return try result.get()
    }
}
