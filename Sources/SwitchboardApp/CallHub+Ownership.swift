import Dispatch
import Foundation
import SwitchboardCore

/// Calls owned per node (ADR 0012, step 3): on a store several daemons share, this hub runs
/// only the calls it claimed. It claims a call before it loads it (so it reads everything the
/// previous owner wrote up to the takeover), its writes carry the claims (the store refuses a
/// call it lost), and it gives calls up once they left its memory. A request for a call another
/// live node holds is answered `unavailable`, naming the node.
extension CallHub {
    /// Runs only the calls `ownership` claims for this node. A start waits up to `wait` for the
    /// live calls another live node still holds (a leader that just lost its lease renews its
    /// node row until it stops); set before ``start(transport:)``.
    /// With `claimingAtStart` off, a start claims nothing: the hub runs the calls its clients'
    /// requests claim and the orphans its sweep adopts (a daemon among several that run calls,
    /// whose start must not take the live calls it finds, nor wait for their live owners).
    public func ownCalls(through ownership: any CallOwnership, wait: Duration, claimingAtStart: Bool = true) {
        queue.sync {
            self.ownership = ownership
            claimWait = wait
            claimsAtStart = claimingAtStart
        }
    }

    /// The calls this hub holds claims on.
    public var claimedCalls: Set<CallCID> { queue.sync { ownership?.held ?? [] } }

    /// How often, in ticks, a shared store's housekeeping runs (``sweepOwnership()``).
    public static let releaseEveryTicks = 50

    /// The store's live state at start, limited to the calls this node could claim: each claim
    /// is tried again until `claimWait` passes, then the live state is read again (after the
    /// claims: a call taken over is read as its previous owner last wrote it).
    func claimedLiveState() throws -> CallStateSnapshot {
        let (ownership, claimWait, claimsAtStart) = queue.sync { (self.ownership, self.claimWait, self.claimsAtStart) }
        guard let ownership else { return try store.loadLiveState() }
        guard claimsAtStart else {
            let snapshot = try store.loadLiveState()
            return queue.sync { owned(snapshot) }
        }
        let live = try store.loadLiveState().calls.map(\.cid)
        let deadline = ContinuousClock.now + claimWait
        var held = Set<CallCID>(), elsewhere: [CallCID: CallOwner] = [:], taken = 0
        while true {
            let owners = try ownership.claim(live.filter { !held.contains($0) })
            elsewhere = [:]
            for cid in live where !held.contains(cid) {
                guard let owner = owners[cid] else { continue }
                if owner.node == ownership.node {
                    held.insert(cid)
                    if owner.generation > 1 { taken += 1 }  // another node held it before
                } else {
                    elsewhere[cid] = owner
                }
            }
            if held.count == Set(live).count || ContinuousClock.now >= deadline { break }
            Thread.sleep(forTimeInterval: 0.05)
        }
        if !elsewhere.isEmpty || held.count < Set(live).count {
            logger.error(
                "live calls another node still holds were left to it",
                metadata: ["calls": "\(Set(live).count - held.count)", "held": "\(elsewhere.map { "\($0.key)=\($0.value.node)" }.sorted().prefix(10))"])
        }
        let snapshot = try store.loadLiveState()
        return queue.sync {
            if taken > 0 { metrics.callsTakenOver.increment(by: taken) }
            return owned(snapshot)
        }
    }

    /// `snapshot` without the calls this node does not hold (all of it without ownership).
    func owned(_ snapshot: CallStateSnapshot) -> CallStateSnapshot {
        dispatchPrecondition(condition: .onQueue(queue))
        guard let ownership else { return snapshot }
        let held = ownership.held
        var mine = snapshot
        mine.calls = snapshot.calls.filter { held.contains($0.cid) }
        mine.members = snapshot.members.filter { held.contains($0.cid) }
        mine.sessions = snapshot.sessions.filter { held.contains($0.cid) }
        return mine
    }

    /// Claims the calls of `cids` this hub does not hold yet, before they are loaded; those it
    /// cannot run now are refused for the coming batch, or with `forwarding` on a hub that
    /// shares calls, those another live node holds are forwarded to it. Returns the calls it
    /// may load.
    func claim(_ cids: [CallCID], forwarding: Bool = true) -> [CallCID] {
        dispatchPrecondition(condition: .onQueue(queue))
        guard let ownership else { return cids }
        let wanted = Set(cids).filter { !ownership.holds($0) }.sorted()
        guard !wanted.isEmpty else { return cids }
        var refusals: [CallCID: SwitchboardError] = [:], elsewhere: [CallCID: CallOwner] = [:]
        do {
            let owners = try ownership.claim(wanted)
            for cid in wanted {
                guard let owner = owners[cid], owner.node == ownership.node else {
                    if let owner = owners[cid], forwarding, sharing != nil {
                        elsewhere[cid] = owner
                    } else {
                        refusals[cid] = owners[cid].map { SwitchboardError.heldElsewhere(cid, by: $0) }
                            ?? SwitchboardError(.unavailable, "this node may not run call \(cid) now (its lease lapsed); try again")
                    }
                    continue
                }
                if owner.generation > 1 { metrics.callsTakenOver.increment() }
            }
        } catch {
            logger.error("claiming calls failed", metadata: ["calls": "\(wanted.count)", "error": "\(error)"])
            for cid in wanted { refusals[cid] = SwitchboardError(.unavailable, "the store could not be reached to claim call \(cid); try again") }
        }
        gateway.refuse(refusals)
        gateway.forward(elsewhere)
        return cids.filter { refusals[$0] == nil && elsewhere[$0] == nil }
    }

    /// The housekeeping of a store several daemons share, every ``releaseEveryTicks`` ticks:
    /// calls that left memory are given up, orphaned calls adopted, lost connections swept.
    func sweepOwnership() {
        guard ownership != nil else { return }
        ticksSinceSweep += 1
        guard ticksSinceSweep >= Self.releaseEveryTicks else { return }
        ticksSinceSweep = 0
        releaseEvicted()
        adoptOrphans()
        sweepLostConnections()
    }

    /// Gives up the claims on calls that left memory (ended and evicted).
    func releaseEvicted() {
        guard let ownership else { return }
        let gone = ownership.held.filter { !gateway.holds($0) }
        guard !gone.isEmpty else { return }
        do {
            try ownership.release(Array(gone))
        } catch {
            logger.warning("giving up calls that left memory failed; tried again later", metadata: ["calls": "\(gone.count)", "error": "\(error)"])
        }
    }
}

extension CallHub {
    /// Orphans adopted per sweep at most (each costs a read of its call).
    static let orphansPerSweep = 100

    /// Adopts live calls no live node holds (their owner died, or gave them up while live), so
    /// that their deadlines pass (a ring's timeout, an empty call's end, the resume windows of
    /// their sessions) even when no client asks for them; a call another node adopts first
    /// stays with it (the claim decides).
    func adoptOrphans() {
        guard let ownership else { return }
        do {
            let orphans = try ownership.orphans(limit: Self.orphansPerSweep)
            guard !orphans.isEmpty else { return }
            preload(orphans, forwarding: false)
            gateway.clearRefusals()
            let adopted = orphans.filter { gateway.holds($0) }
            guard !adopted.isEmpty else { return }
            logger.notice("adopted live calls no live node held", metadata: ["calls": "\(adopted.count)", "first": "\(adopted[0])"])
        } catch {
            logger.warning("looking for calls no live node holds failed; tried again later", metadata: ["error": "\(error)"])
        }
    }
}

/// Client connections on a store several daemons share (ADR 0012, step 3): a node holds those
/// it made or took over by a resume; the sessions of connections no live node holds end.
extension CallHub {
    /// A resume naming a connection this node does not hold: taken over from the store, if it
    /// is there and the user's (else the client gets a new connection); the node that held it,
    /// when it is another, hears that it moved.
    func takeOver(_ resume: ResumeRequest, of user: String) {
        dispatchPrecondition(condition: .onQueue(queue))
        guard ownership != nil, let id = UserID(user), !gateway.holdsResume(resume, user: id) else { return }
        do {
            guard let taken = try store.takeConnection(resumeToken: resume.token, user: id) else { return }
            gateway.adopt(taken.record, now: wallClock(), sessions: taken.sessions)
            metrics.connectionsTakenOver.increment()
            logger.info("took over a connection resumed here", metadata: ["connection": "\(taken.record.id)", "from": "\(taken.previous ?? "none")"])
            if let sharing, let previous = taken.previous, previous != ownership?.node {
                sharing.send([previous: CallForwardBatch(movedConnections: [taken.record.id])])
            }
        } catch {
            logger.warning("taking over a resumed connection failed; the client gets a new one", metadata: ["error": "\(error)"])
        }
    }

    /// Every ``releaseEveryTicks`` ticks: the sessions of this node's calls whose connection no
    /// live node holds any more (gone from the store, or its node's lease lapsed a resume window
    /// ago) leave (`connection_lost`), as a connection's own node would have ended them, and the
    /// rows of such connections go.
    func sweepLostConnections() {
        guard ownership != nil else { return }
        let elsewhere = gateway.sessionsHeldElsewhere
        guard !elsewhere.isEmpty else { return }
        do {
            let lost = try store.lostConnections(elsewhere, after: gateway.configuration.resumeWindow)
            guard !lost.isEmpty else { return }
            logger.info("sessions of connections no live node holds leave", metadata: ["connections": "\(lost.count)"])
            metrics.connectionsOrphaned.increment(by: lost.count)
            batch { gateway, output, now in
                gateway.connectionsLostElsewhere(lost.sorted(), now: now, into: &output)
                // Their rows, of a dead node, are nobody's now.
                output.calls.mutations += lost.sorted().map(CallMutation.deleteConnection)
            }
        } catch {
            logger.warning("checking for lost connections failed; tried again later", metadata: ["error": "\(error)"])
        }
    }
}
