import CoreMetrics
import Logging
import Synchronization
import SwitchboardCore

/// What one reconciliation of one Janus changed.
public struct RoomReconciliation: Sendable, Equatable {
    public var roomsCreated = 0
    /// Rooms of calls that ended or moved away.
    public var roomsDestroyed = 0
    /// Rooms Switchboard marked as its own but knew nothing of (left by a crash, or made behind its back).
    public var orphansDestroyed = 0
    public var allowedListsChanged = 0
    public var tokensAdded = 0
    public var tokensRevoked = 0
    public var sessionsEvicted = 0

    public init() {}
}

/// Makes each Janus hold exactly the rooms and tokens the live calls need: a room per call
/// placed there (created with its derived secret and PIN, sized from the call type), a token
/// per participant session (added to Janus and to the room's `allowed` list), and nothing else
/// of Switchboard's (rooms whose description starts with ``SFURoomKeys/roomDescriptionPrefix``,
/// tokens starting with ``SFURoomKeys/tokenPrefix``; an operator's own are left alone).
///
/// It is level-triggered: each run compares what the calls want with what Janus reports, so a
/// crash between a commit and a Janus request, a Janus restart (which forgets everything) or a
/// room made behind Switchboard's back all converge on the next run. Runs come after commits
/// that touch rooms (``kick()``) and every `interval`; they never run on the signaling or call
/// queues and every request is bounded by the client's timeout.
public final class JanusRoomReconciler: Sendable {
    let targets: @Sendable () -> [SFUPollTarget]
    /// What the rooms should hold; `nil` when it cannot be known now (the run is skipped).
    let desired: @Sendable () async -> [SFUID: [DesiredRoom]]?
    let keys: SFURoomKeys
    let janus: JanusAdminClient
    let secrets: SecretReader
    let logger: Logger
    let metrics: RoomMetrics
    private let state = Mutex(State())
    private let kicks: AsyncStream<Void>.Continuation
    private let stream: AsyncStream<Void>
    private let tasks = Mutex<[Task<Void, Never>]>([])

    struct State {
        /// Rooms this process created or saw wanted, per SFU (what is not here is an orphan).
        var known: [SFUID: Set<UInt64>] = [:]
        /// The `allowed` list last applied per room, so an unchanged room costs no request.
        var applied: [SFUID: [UInt64: Set<String>]] = [:]
        /// Runs per Janus (every ``verifyEvery``-th forgets what was applied).
        var runs: [SFUID: Int] = [:]
        /// Janus servers with a run under way, and those kicked meanwhile.
        var running: Set<SFUID> = []
        var dirty: Set<SFUID> = []
    }

    /// Every this many runs the `allowed` lists are re-applied whatever was applied before.
    static let verifyEvery = 30

    public init(
        targets: @escaping @Sendable () -> [SFUPollTarget], desired: @escaping @Sendable () async -> [SFUID: [DesiredRoom]]?,
        keys: SFURoomKeys, janus: JanusAdminClient, secrets: SecretReader = SecretReader(),
        metricsFactory: any MetricsFactory = NOOPMetricsHandler.instance, logger: Logger
    ) {
        self.targets = targets
        self.desired = desired
        self.keys = keys
        self.janus = janus
        self.secrets = secrets
        self.logger = logger
        self.metrics = RoomMetrics(factory: metricsFactory)
        (stream, kicks) = AsyncStream.makeStream(of: Void.self, bufferingPolicy: .bufferingNewest(1))
    }

    /// Reconciles every Janus once, concurrently. A Janus that cannot be reached keeps what it
    /// has until a later run (its calls move when polling marks it down); with no answer from
    /// `desired`, none is touched.
    @discardableResult
    public func reconcileAll() async -> [SFUID: Result<RoomReconciliation, JanusError>] {
        guard let wanted = await desired() else { return [:] }
        return await withTaskGroup(of: (SFUID, Result<RoomReconciliation, JanusError>).self) { group in
            for target in targets() {
                let rooms = wanted[target.id] ?? []
                group.addTask {
                    do throws(JanusError) {
                        return (target.id, .success(try await self.reconcile(target, rooms: rooms)))
                    } catch {
                        self.logger.warning(
                            "SFU room reconciliation failed; will retry", metadata: ["sfu.id": "\(target.id)", "error": "\(error)"])
                        return (target.id, .failure(error))
                    }
                }
            }
            var results: [SFUID: Result<RoomReconciliation, JanusError>] = [:]
            for await (id, result) in group { results[id] = result }
            return results
        }
    }

    /// Makes one Janus hold the rooms and tokens `rooms` need, and none other of Switchboard's.
    public func reconcile(_ target: SFUPollTarget, rooms: [DesiredRoom]) async throws(JanusError) -> RoomReconciliation {
        guard let secret = secrets.read(target.janus.adminSecret) else { throw .failed("the admin secret in \(target.janus.adminSecret) is unset or empty") }
        let access = target.janus
        var report = RoomReconciliation()
        var wantedTokens: [UInt64: Set<String>] = [:]
        for room in rooms { wantedTokens[room.room] = Set(room.sessions.map { keys.token(room: room.room, session: $0) }) }
        let allWanted = wantedTokens.values.reduce(into: Set<String>()) { $0.formUnion($1) }
        state.withLock { state in
            state.known[target.id, default: []].formUnion(rooms.map(\.room))
            state.runs[target.id, default: 0] += 1
            if state.runs[target.id]! % Self.verifyEvery == 0 { state.applied[target.id] = nil }
        }

        // Tokens first, so a room's allowed list never names a token Janus refuses.
        let present = Set(try await janus.listTokens(access, secret: secret).filter { $0.hasPrefix(SFURoomKeys.tokenPrefix) })
        for token in allWanted.subtracting(present).sorted() {
            try await janus.addToken(access, secret: secret, token: token)
            report.tokensAdded += 1
        }

        let listed = try await janus.listRooms(access, secret: secret)
        let existing = Set(listed.filter { $0.description?.hasPrefix(SFURoomKeys.roomDescriptionPrefix) ?? false }.map(\.room))
        for room in rooms.sorted(by: { $0.room < $1.room }) {
            let tokens = wantedTokens[room.room] ?? []
            if !existing.contains(room.room) {
                try await janus.createRoom(
                    access, secret: secret, room: room.room, roomSecret: keys.roomSecret(room.room), pin: keys.roomPIN(room.room),
                    publishers: room.publishers, allowed: tokens.sorted(), description: SFURoomKeys.roomDescriptionPrefix + room.call)
                report.roomsCreated += 1
            } else if state.withLock({ $0.applied[target.id]?[room.room] }) != tokens {
                let roomSecret = keys.roomSecret(room.room)
                let after = try await janus.changeAllowed(access, secret: secret, room: room.room, roomSecret: roomSecret, add: true, tokens: tokens.sorted())
                let stale = Set(after).subtracting(tokens)
                if !stale.isEmpty {
                    try await janus.changeAllowed(access, secret: secret, room: room.room, roomSecret: roomSecret, add: false, tokens: stale.sorted())
                }
                report.allowedListsChanged += 1
            } else {
                continue
            }
            state.withLock { $0.applied[target.id, default: [:]][room.room] = tokens }
        }

        // Then what no call wants any more: sessions holding revoked tokens leave at once.
        let revoked = present.subtracting(allWanted)
        if !revoked.isEmpty {
            for session in try await janus.sessions(using: revoked, access, secret: secret) {
                try await janus.destroySession(session, access, secret: secret)
                report.sessionsEvicted += 1
            }
            for token in revoked.sorted() {
                try await janus.removeToken(access, secret: secret, token: token)
                report.tokensRevoked += 1
            }
        }
        let wantedRooms = Set(rooms.map(\.room))
        for room in existing.subtracting(wantedRooms).sorted() {
            do {
                try await janus.destroyRoom(access, secret: secret, room: room, roomSecret: keys.roomSecret(room))
            } catch .refused(let code, let reason) {
                // Not ours after all (another secret): leave it, and go on with the rest.
                logger.warning(
                    "a room marked as Switchboard's refused its destroy; left alone",
                    metadata: ["sfu.id": "\(target.id)", "room": "\(room)", "error": "\(code) \(LogText.escape(reason))"])
                continue
            }
            let wasKnown = state.withLock { state in
                state.applied[target.id]?[room] = nil
                return state.known[target.id]?.remove(room) != nil
            }
            if wasKnown { report.roomsDestroyed += 1 } else { report.orphansDestroyed += 1 }
        }
        metrics.record(report)
        if report != RoomReconciliation() {
            logger.info(
                "SFU rooms reconciled",
                metadata: [
                    "sfu.id": "\(target.id)", "rooms.created": "\(report.roomsCreated)", "rooms.destroyed": "\(report.roomsDestroyed)",
                    "rooms.orphans": "\(report.orphansDestroyed)", "tokens.added": "\(report.tokensAdded)",
                    "tokens.revoked": "\(report.tokensRevoked)", "sessions.evicted": "\(report.sessionsEvicted)",
                ])
        }
        return report
    }

    /// Reconciles `target` with what the calls want now, again while kicks came meanwhile.
    private func runUntilClean(_ target: SFUPollTarget) async {
        while true {
            guard let wanted = await desired() else {
                // Not known now: the next kick or periodic run tries again.
                state.withLock { state in
                    state.dirty.remove(target.id)
                    state.running.remove(target.id)
                }
                return
            }
            let rooms = wanted[target.id] ?? []
            do throws(JanusError) {
                _ = try await reconcile(target, rooms: rooms)
            } catch {
                logger.warning("SFU room reconciliation failed; will retry", metadata: ["sfu.id": "\(target.id)", "error": "\(error)"])
            }
            let again = state.withLock { state -> Bool in
                if state.dirty.remove(target.id) != nil { return true }
                state.running.remove(target.id)
                return false
            }
            if !again || Task.isCancelled { return }
        }
    }

    /// Asks for a run soon (after a commit that placed, moved or ended a call with a room, or
    /// admitted or removed one of its sessions). Kicks while a run is under way fold into one.
    public func kick() { kicks.yield() }

    /// Runs at once (the start-up reconciliation), after every ``kick()``, and every `interval`.
    /// Each Janus is reconciled on its own: one that answers slowly (or not at all) delays only
    /// its own next run, never another Janus's (a kick while a Janus's run is under way makes
    /// that Janus run once more when it ends).
    public func start(interval: Duration) {
        let stream = self.stream
        let runner = Task { [self] in
            await withDiscardingTaskGroup { group in
                for await _ in stream {
                    for target in targets() {
                        let startRun = state.withLock { state -> Bool in
                            if state.running.contains(target.id) {
                                state.dirty.insert(target.id)
                                return false
                            }
                            state.running.insert(target.id)
                            return true
                        }
                        guard startRun else { continue }
                        group.addTask { await self.runUntilClean(target) }
                    }
                }
            }
        }
        let ticker = Task { [kicks] in
            while !Task.isCancelled {
                kicks.yield()
                try? await Task.sleep(for: interval)
            }
        }
        tasks.withLock { $0 = [runner, ticker] }
    }

    public func stop() {
        kicks.finish()
        tasks.withLock { tasks in
            for task in tasks { task.cancel() }
            tasks = []
        }
    }
}

/// `switchboard_sfu_rooms_total{action}` and `switchboard_sfu_tokens_total{action}`.
struct RoomMetrics: Sendable {
    let rooms: [String: Counter]
    let tokens: [String: Counter]
    let evicted: Counter

    init(factory: any MetricsFactory) {
        rooms = Dictionary(uniqueKeysWithValues: ["created", "destroyed", "reconciled"].map {
            ($0, Counter(label: "switchboard_sfu_rooms_total", dimensions: [("action", $0)], factory: factory))
        })
        tokens = Dictionary(uniqueKeysWithValues: ["added", "revoked"].map {
            ($0, Counter(label: "switchboard_sfu_tokens_total", dimensions: [("action", $0)], factory: factory))
        })
        evicted = Counter(label: "switchboard_sfu_sessions_evicted_total", factory: factory)
    }

    func record(_ report: RoomReconciliation) {
        rooms["created"]?.increment(by: report.roomsCreated)
        rooms["destroyed"]?.increment(by: report.roomsDestroyed)
        rooms["reconciled"]?.increment(by: report.orphansDestroyed)
        tokens["added"]?.increment(by: report.tokensAdded)
        tokens["revoked"]?.increment(by: report.tokensRevoked)
        evicted.increment(by: report.sessionsEvicted)
    }
}
