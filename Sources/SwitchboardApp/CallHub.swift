import CoreMetrics
import Dispatch
import Foundation
import Logging
import SwitchboardCore
import Synchronization

/// Runs the call protocol (`/v1/connect`) on a queue of its own: feeds socket events to the
/// pure ``CallGateway``, commits what it changed to the ``CallStore`` in one transaction per
/// batch (a group commit), and only then sends the responses and events.
///
/// Invariant behind `@unchecked Sendable`: every stored `var` is touched only on `queue`, a
/// serial queue of its own (not the signaling one: a commit never holds up PeerJS relaying).
public final class CallHub: @unchecked Sendable {
    public let queue: DispatchQueue
    let store: any CallStore
    let placement: any PlacementSource
    let wallClock: @Sendable () -> Date
    let newID: @Sendable () -> String
    let logger: Logger
    let metrics: CallMetrics
    var gateway: CallGateway
    /// Set when a commit failed and the store could not be read to roll back: memory may hold
    /// changes the store does not. Until a read of the store succeeds and rebuilds the calls
    /// from it, no batch is committed nor answered from memory (`unavailable`). On ``queue``.
    var outOfSync = false
    var tokenVerifier: (any TokenVerifier)?
    var transport: (any OutboundTransport)?
    var timer: (any DispatchSourceTimer)?
    /// Told after a commit that changed what an SFU room should hold (the room reconciler's kick).
    var roomsChanged: (@Sendable () -> Void)?
    /// Told after every commit that wrote webhook messages (the delivery worker's inbox).
    var webhooksCommitted: (@Sendable ([PendingWebhook]) -> Void)?
    /// On a store several daemons share: whose claims say which calls this node runs (ADR
    /// 0012), and how long a start waits for calls a live node still holds. `nil`: every call.
    var ownership: (any CallOwnership)?
    var claimWait: Duration = .zero
    /// Whether a start claims the live calls it can (``ownCalls(through:wait:claimingAtStart:)``).
    var claimsAtStart = true
    /// Set when other nodes run calls too (``shareCalls(peers:send:)``). On ``queue``.
    var sharing: CallSharing?
    /// Ticks since the last sweep of a shared store (``sweepOwnership()``).
    var ticksSinceSweep = 0
    /// Events queued by ``enqueue(_:)`` and whether a drain is scheduled (any thread).
    let inbox = Mutex(Inbox())
    /// Admin changes sent to their calls' owners, waiting for the answers (any thread).
    let forwardedAdmin = ForwardedAdminWaits()

    struct Inbox {
        var events: [TransportEvent] = []
        var scheduled = false
    }

    /// The wall clock rounded to milliseconds, the precision the store keeps, so state read
    /// back after a restart equals state in memory.
    public static let millisecondClock: @Sendable () -> Date = { roundedToMilliseconds(Date()) }

    /// `date` rounded to milliseconds (see ``millisecondClock``).
    public static func roundedToMilliseconds(_ date: Date) -> Date {
        Date(timeIntervalSince1970: (date.timeIntervalSince1970 * 1000).rounded() / 1000)
    }

    /// How often deadlines (rings, resume windows, idle sockets, token expiry) are checked.
    public static let tickInterval: DispatchTimeInterval = .milliseconds(100)

    public init(
        queue: DispatchQueue, configuration: CallConfiguration, store: any CallStore, placement: any PlacementSource,
        tokenVerifier: (any TokenVerifier)?, wallClock: @escaping @Sendable () -> Date = CallHub.millisecondClock,
        newID: @escaping @Sendable () -> String = { UUID().uuidString.lowercased() }, metricsFactory: any MetricsFactory = NOOPMetricsHandler.instance,
        logger: Logger
    ) {
        self.queue = queue
        self.store = store
        self.placement = placement
        self.tokenVerifier = tokenVerifier
        self.wallClock = wallClock
        self.newID = newID
        self.logger = logger
        self.metrics = CallMetrics(factory: metricsFactory)
        self.gateway = CallGateway(configuration: configuration)
    }

    /// Rebuilds live calls, ring deadlines, sessions and resumable connections from the store
    /// (sessions whose connection is unknown leave), then starts the deadline timer.
    public func start(transport: any OutboundTransport) throws {
        let snapshot = try claimedLiveState()
        try queue.sync {
            self.transport = transport
            var output = CallGatewayOutput()
            let now = wallClock()
            gateway.restore(snapshot, now: now, node: ownership?.node, into: &output)
            gateway.addWebhooks(into: &output, now: now, newID: newID)
            let placement = self.placement
            gateway.restoreSFUs { placement.current($0) }
            try store.apply(output.mutations)
            handOverWebhooks(output.mutations)
            output.calls.mutations = []
            finish(output)
            logger.info(
                "call state restored",
                metadata: [
                    "calls": "\(snapshot.calls.count)", "sessions": "\(snapshot.sessions.count)",
                    // Those restored here (another node's stay with it, to be taken over by a resume).
                    "connections": "\(gateway.clients.count)",
                ])
            let timer = DispatchSource.makeTimerSource(queue: queue)
            timer.schedule(deadline: .now() + Self.tickInterval, repeating: Self.tickInterval)
            timer.setEventHandler { [weak self] in self?.tick() }
            timer.resume()
            self.timer = timer
        }
    }

    /// Stops the timer and detaches the transport.
    public func stop() {
        queue.sync {
            timer?.cancel()
            timer = nil
            transport = nil
        }
    }

    /// Runs `body` on the queue with the gateway, for inspection (admin API, tests).
    public func withGateway<T: Sendable>(_ body: @Sendable (CallGateway) -> T) -> T {
        queue.sync { body(gateway) }
    }

    /// Checks deadlines now (tests drive time with their own clock).
    public func tickNow() {
        queue.sync { tick() }
    }

    func tick() {
        dispatchPrecondition(condition: .onQueue(queue))
        batch { gateway, output, now in gateway.tick(now: now, into: &output) }
        sweepOwnership()
    }
}
