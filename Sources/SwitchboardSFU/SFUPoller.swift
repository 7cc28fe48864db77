import Foundation
import Logging
import Synchronization
import SwitchboardCore

/// Pulls the health and load of every pulled SFU (kind `janus`) every `interval`, each poll
/// bounded by the client's timeout, all SFUs of a round polled concurrently. It runs on Swift
/// concurrency's executors: never on the signaling or call queues, and a slow or dead SFU
/// delays nothing but its own next poll (``start()`` polls each SFU independently). Results go to `report` (the SFU directory), which
/// turns an answer into a fresh load and leaves staleness to mark a silent SFU down.
public final class SFUPoller: Sendable {
    let targets: @Sendable () -> [SFUPollTarget]
    let report: @Sendable (SFUPollTarget, SFUPollResult) -> Void
    let janus: JanusAdminClient
    let secrets: SecretReader
    let wallClock: @Sendable () -> Date
    let interval: Duration
    let logger: Logger
    private let task = LockedTask()
    /// SFUs with a poll under way.
    private let inFlight = Mutex<Set<SFUID>>([])

    public init(
        targets: @escaping @Sendable () -> [SFUPollTarget], report: @escaping @Sendable (SFUPollTarget, SFUPollResult) -> Void,
        janus: JanusAdminClient, secrets: SecretReader = SecretReader(), interval: Duration,
        wallClock: @escaping @Sendable () -> Date = { Date() }, logger: Logger
    ) {
        self.targets = targets
        self.report = report
        self.janus = janus
        self.secrets = secrets
        self.interval = interval
        self.wallClock = wallClock
        self.logger = logger
    }

    /// Polls every target once, concurrently, and reports each result. Returns them in target order.
    @discardableResult
    public func pollOnce() async -> [SFUPollResult] {
        let round = targets()
        return await withTaskGroup(of: (Int, SFUPollResult).self) { group in
            for (index, target) in round.enumerated() {
                group.addTask { (index, await self.poll(target)) }
            }
            var results = [SFUPollResult?](repeating: nil, count: round.count)
            for await (index, result) in group {
                results[index] = result
                report(round[index], result)
            }
            return results.compactMap { $0 }
        }
    }

    /// One poll of one SFU.
    public func poll(_ target: SFUPollTarget) async -> SFUPollResult {
        guard let secret = secrets.read(target.janus.adminSecret) else {
            return result(.noSecret, target, detail: "the admin secret in \(target.janus.adminSecret) is unset or empty")
        }
        do {
            let load = try await janus.sessionCount(target.janus, secret: secret)
            return SFUPollResult(outcome: .ok, load: load, at: wallClock())
        } catch {
            switch error {
            case .timeout: return result(.timeout, target, detail: "no answer within the poll timeout")
            case .failed(let reason): return result(.failed, target, detail: reason)
            case .refused(let code, let reason): return result(.refused, target, detail: "Janus error \(code): \(reason)")
            }
        }
    }

    private func result(_ outcome: SFUPollResult.Outcome, _ target: SFUPollTarget, detail: String) -> SFUPollResult {
        logger.warning(
            "SFU poll failed", metadata: ["sfu.id": "\(target.id)", "outcome": "\(outcome.rawValue)", "detail": "\(LogText.escape(detail))"])
        return SFUPollResult(outcome: outcome, at: wallClock(), detail: detail)
    }

    /// Starts polling: every `interval`, each SFU whose previous poll has finished is polled
    /// again. SFUs are polled independently, so one that answers slowly (or times out) never
    /// delays the polls of the others, and one SFU never has two polls in flight.
    public func start() {
        task.replace(Task { [self] in
            await withDiscardingTaskGroup { group in
                while !Task.isCancelled {
                    for target in targets() where inFlight.withLock({ $0.insert(target.id).inserted }) {
                        group.addTask {
                            let result = await self.poll(target)
                            self.inFlight.withLock { _ = $0.remove(target.id) }
                            self.report(target, result)
                        }
                    }
                    try? await Task.sleep(for: interval)
                }
                group.cancelAll()
            }
        })
    }

    /// Stops polling; polls under way are cancelled.
    public func stop() {
        task.replace(nil)
    }
}

/// The running task, replaced (and the old one cancelled) under a lock.
final class LockedTask: Sendable {
    private let state = Mutex<Task<Void, Never>?>(nil)

    func replace(_ new: Task<Void, Never>?) {
        state.withLock { current in
            current?.cancel()
            current = new
        }
    }
}
