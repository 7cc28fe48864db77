import Dispatch
import Foundation
import Metrics
import SwitchboardApp
import SwitchboardAuth
import SwitchboardCore
import SwitchboardPostgres

/// What a daemon runs of the call protocol when every daemon runs calls (`store.postgres_calls`
/// spread, ADR 0012 step 3.6), built while it relays and kept when it takes the lead.
///
/// Invariant behind `@unchecked Sendable`: only `let`s; a timer source is safe to cancel from
/// any thread.
final class SpreadCalls: @unchecked Sendable {
    let hub: CallHub
    /// Follows the store while the daemon relays; the leader's directory once it leads.
    let directory: SFUDirectory
    let tokens: JWTTokenService?
    /// Tells the participants of this node's calls that their SFU failed over.
    let announcer: any DispatchSourceTimer

    init(hub: CallHub, directory: SFUDirectory, tokens: JWTTokenService?, announcer: any DispatchSourceTimer) {
        self.hub = hub
        self.directory = directory
        self.tokens = tokens
        self.announcer = announcer
    }

    func stop() {
        announcer.cancel()
        hub.stop()
        directory.stop()
    }
}

extension SwitchboardDaemon {
    /// With `store.postgres_calls` spread, while this daemon relays: its own call hub for its
    /// call protocol sockets, which stay here (``ClusterTunnel/keepCallsLocal(path:hub:)``,
    /// through this node's signaling hub, started early for them). It
    /// claims nothing at start; it runs the calls its clients create or ask for that no live
    /// node holds, and the orphans its sweep adopts, and forwards requests for other nodes'
    /// calls to them. Its placements follow the store (the leader polls the SFUs), its webhook
    /// messages and room changes reach the leader as notices.
    func startSpreadCalls(_ store: PostgresStore, tunnel: ClusterTunnel, factory: any MetricsFactory) throws -> SpreadCalls? {
        guard configuration.postgresSpreadsCalls, let path = configuration.connectPath else { return nil }
        let auth = configuration.auth
        let tokens = Blocking.wait { await JWTTokenService(configuration: auth) }
        let directory = try makeDirectory(store: store, factory: factory)
        try directory.refreshFromStore()
        directory.followStore(every: configuration.placement.pollInterval)
        let calls = makeCallHub(store: store, placement: directory, tokens: tokens, factory: factory)
        calls.ownCalls(through: store.ownCalls(as: nodeID), wait: configuration.postgresLease, claimingAtStart: false)
        calls.shareCalls(peers: { [weak tunnel] in tunnel?.peers ?? [] }, send: { [weak tunnel] in tunnel?.sendCalls($0) })
        calls.onWebhooksCommitted { [weak tunnel] _ in tunnel?.notifyLeader(.webhooks) }
        calls.onRoomsChanged { [weak tunnel] in tunnel?.notifyLeader(.rooms) }
        tunnel.callsArrived = { [weak calls] batch, from in calls?.forwardArrived(batch, from: from) }
        tunnel.keepPeers()
        do {
            try calls.start(transport: transport)
        } catch {
            directory.stop()
            throw error
        }
        // Its call sockets go through this node's signaling hub, as a leader's do (connection
        // caps and rates per node), to its call hub.
        hub.attach(calls: calls, path: path)
        hub.start(transport: transport, tokens: tokens)
        tunnel.keepCallsLocal(path: path, hub: hub)
        return SpreadCalls(hub: calls, directory: directory, tokens: tokens, announcer: announceMoves(of: calls, on: directory))
    }

    /// Every poll interval: the failover moves of the calls this node runs that no
    /// `call.sfu_changed` followed yet (the leader moved them in the store) are announced to
    /// their participants, once (``CallHub/announceFailovers(_:lookup:)``); on the leader, the
    /// placements other nodes made are read first.
    private func announceMoves(of calls: CallHub, on directory: SFUDirectory) -> any DispatchSourceTimer {
        let interval = max(1, Int(clamping: configuration.placement.pollInterval.milliseconds))
        let timer = DispatchSource.makeTimerSource(queue: DispatchQueue(label: "switchboard.calls.moves", qos: .utility))
        timer.schedule(deadline: .now() + .milliseconds(interval), repeating: .milliseconds(interval), leeway: .milliseconds(interval / 10))
        timer.setEventHandler { [weak calls, weak directory, logger] in
            guard let calls, let directory else { return }
            if !directory.isFollowing {
                // The leader's directory: other nodes' placements, for the admin API's views.
                do throws(SwitchboardError) {
                    try directory.refreshPlacementsFromStore()
                } catch {
                    logger.warning("could not read the placements from the store", metadata: ["error": "\(error)"])
                }
            }
            let held = calls.claimedCalls
            let moved = directory.allPlacements().filter { $0.reason == PlacementRecord.failoverReason && CallCID(cid: $0.callID).map(held.contains) == true }
            if !moved.isEmpty { calls.announceFailovers(moved, lookup: directory.current) }
        }
        timer.resume()
        return timer
    }
}
