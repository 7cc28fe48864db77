import CSwitchboardShims
import Dispatch
import Foundation
import Logging
import SwitchboardCore

/// A ``WebhookPoster`` that makes its attempts in a delivery worker process
/// (``WebhookWorkerProcess``, `switchboard webhook-worker`) whose threads all run at idle
/// priority (ADR 0011), over one Unix socket to it.
///
/// The worker is started at the first attempt and again after it ends (not more often than
/// once a second; meanwhile attempts fail and the scheduler retries them). When it ends, every
/// attempt it held fails. An attempt it does not answer within its timeout and a grace fails
/// too, so a stopped worker never holds a lane: one sweep a second, while attempts are in
/// flight, fails those past their deadline (no timer per attempt).
///
/// Attempts are written in bursts: what is posted while a write runs goes in the next one.
public final class ProcessWebhookPoster: WebhookPoster, @unchecked Sendable {
    /// The worker's command: the daemon's own executable and its arguments.
    public let executable: URL
    public let arguments: [String]
    let logger: Logger
    /// How long past an attempt's own timeout the daemon waits for the worker's answer.
    let answerGrace: Duration
    /// The shortest time between two starts of the worker.
    let respawnInterval: Duration
    /// How often attempts past their deadline are looked for.
    let sweepInterval: Duration
    /// Monotonic nanoseconds: deadlines are set and checked on it (tests move it).
    let clock: @Sendable () -> UInt64

    // Guarded by `lock`.
    private let lock = NSLock()
    private var worker: Worker?
    private var inFlight: [UInt64: InFlight] = [:]
    private var sweepScheduled = false
    private var nextNumber: UInt64 = 0
    private var lastStart: ContinuousClock.Instant?
    private var stopped = false
    /// Writes to the worker, in order, off the caller's thread (a full socket waits here).
    private let writes = DispatchQueue(label: "switchboard.webhooks.worker-writes")

    public init(
        executable: URL, arguments: [String], respawnInterval: Duration = .seconds(1), answerGrace: Duration = .seconds(5),
        sweepInterval: Duration = .seconds(1), clock: @escaping @Sendable () -> UInt64 = { DispatchTime.now().uptimeNanoseconds }, logger: Logger
    ) {
        self.executable = executable
        self.arguments = arguments
        self.respawnInterval = respawnInterval
        self.answerGrace = answerGrace
        self.sweepInterval = sweepInterval
        self.clock = clock
        self.logger = logger
    }

    private struct InFlight {
        let completion: @Sendable (WebhookScheduler.Outcome) -> Void
        /// On `clock`: past it, the attempt fails.
        let deadline: UInt64
        let wait: Duration
    }

    /// The process id of the running worker (tests).
    public var workerPID: Int32? { lock.withLock { worker?.process.processIdentifier } }

    public func post(
        _ message: WebhookMessage, to url: String, keys: [[UInt8]], now: Date, timeout: Duration,
        completion: @escaping @Sendable (WebhookScheduler.Outcome) -> Void
    ) {
        let wait = timeout + answerGrace
        let deadline = clock() &+ UInt64(max(0, wait.milliseconds)) * 1_000_000
        let started: Result<(Worker, UInt64, Bool), SwitchboardError> = lock.withLock {
            do throws(SwitchboardError) {
                let worker = try runningWorker()
                nextNumber += 1
                inFlight[nextNumber] = InFlight(completion: completion, deadline: deadline, wait: wait)
                let sweep = !sweepScheduled
                sweepScheduled = true
                return .success((worker, nextNumber, sweep))
            } catch {
                return .failure(error)
            }
        }
        guard case .success(let (worker, number, sweep)) = started else {
            if case .failure(let error) = started { completion(.failed(error.message)) }
            return
        }
        if sweep { scheduleSweep() }
        let attempt = WebhookWorkerWire.Attempt(
            n: number, id: message.id, url: url, body: message.body, keys: keys.map { Data($0).base64EncodedString() },
            now: Int64((now.timeIntervalSince1970 * 1000).rounded()), timeoutMs: timeout.milliseconds)
        if worker.enqueue(attempt.frame) { writes.async { worker.drain() } }
    }

    /// Fails every attempt past its deadline; the next sweep is set while any is in flight.
    /// Tests that move `clock` call it.
    public func sweep() {
        let now = clock()
        let expired: [InFlight] = lock.withLock {
            let numbers = inFlight.compactMap { $0.value.deadline <= now ? $0.key : nil }
            return numbers.compactMap { inFlight.removeValue(forKey: $0) }
        }
        for attempt in expired { attempt.completion(.failed("the delivery worker did not answer within \(attempt.wait)")) }
    }

    private func scheduleSweep() {
        DispatchQueue.global().asyncAfter(deadline: .now() + .milliseconds(Int(sweepInterval.milliseconds))) { [weak self] in
            guard let self else { return }
            self.sweep()
            let again = self.lock.withLock {
                self.sweepScheduled = !self.inFlight.isEmpty
                return self.sweepScheduled
            }
            if again { self.scheduleSweep() }
        }
    }

    /// Ends the worker: it lets its attempts in flight end, then exits (killed after `wait`).
    public func shutdown(wait: Duration = .seconds(3)) {
        let worker: Worker? = lock.withLock {
            stopped = true
            return self.worker
        }
        guard let worker else { return }
        worker.closeInput()
        worker.end(after: wait)
    }

    /// The worker, started when there is none. Under `lock`.
    private func runningWorker() throws(SwitchboardError) -> Worker {
        guard !stopped else { throw SwitchboardError(.unavailable, "webhook delivery is stopping") }
        if let worker { return worker }
        let now = ContinuousClock.now
        if let lastStart, now - lastStart < respawnInterval {
            throw SwitchboardError(.unavailable, "the delivery worker is restarting")
        }
        lastStart = now
        do {
            let worker = try Worker(executable: executable, arguments: arguments)
            self.worker = worker
            logger.info("webhook delivery worker started", metadata: ["pid": "\(worker.process.processIdentifier)"])
            let reader = Thread { [weak self] in self?.readAnswers(from: worker) }
            reader.name = "webhook-worker-answers"
            reader.start()
            return worker
        } catch {
            logger.error("the webhook delivery worker could not start", metadata: ["error": "\(error)"])
            throw SwitchboardError(.unavailable, "the delivery worker could not start: \(error)")
        }
    }

    /// Takes the worker's answers until its socket ends, then fails what it still held.
    private func readAnswers(from worker: Worker) {
        var reader = LineReader(fd: worker.socket)
        while let line = reader.next() {
            guard let answer = WebhookWorkerWire.Answer(line: line) else {
                logger.error("the webhook delivery worker sent an unreadable answer", metadata: ["bytes": "\(line.count)"])
                continue
            }
            finish(answer.n, answer.outcome)
        }
        // The socket ends when the worker exits; one that closed it and lives on is ended.
        worker.end(after: .seconds(5))
        let orphans: [@Sendable (WebhookScheduler.Outcome) -> Void] = lock.withLock {
            guard self.worker === worker else { return [] }
            self.worker = nil
            let held = inFlight.values.map(\.completion)
            inFlight = [:]
            return held
        }
        worker.closeSocket()
        if !orphans.isEmpty || worker.process.terminationStatus != 0 {
            logger.warning(
                "the webhook delivery worker ended", metadata: ["status": "\(worker.process.terminationStatus)", "attempts_failed": "\(orphans.count)"])
        }
        for completion in orphans { completion(.failed("the delivery worker ended")) }
    }

    private func finish(_ number: UInt64, _ outcome: WebhookScheduler.Outcome) {
        let attempt = lock.withLock { inFlight.removeValue(forKey: number) }
        attempt?.completion(outcome)
    }

    /// One worker process and the daemon's end of its socket.
    final class Worker: @unchecked Sendable {
        let process: Process
        let socket: Int32
        private let lock = NSLock()
        private var open = true
        /// Frames posted and not written yet, and whether a drain is under way (`queueLock`).
        private let queueLock = NSLock()
        private var queued: [UInt8] = []
        private var draining = false
        /// Left when the process has exited and was reaped (Foundation's `waitUntilExit`
        /// spins off the main thread: measured, a whole CPU while it waits).
        private let exited = DispatchGroup()

        init(executable: URL, arguments: [String]) throws {
            var fds: [Int32] = [-1, -1]
            let made = sb_socketpair(&fds)
            guard made == 0 else { throw SwitchboardError(.internalError, "socketpair: \(String(cString: sb_strerror(-made)))") }
            let theirs = FileHandle(fileDescriptor: fds[1], closeOnDealloc: false)
            process = Process()
            process.executableURL = executable
            process.arguments = arguments
            process.standardInput = theirs
            process.standardOutput = theirs
            exited.enter()
            process.terminationHandler = { [exited] _ in exited.leave() }
            do {
                try process.run()
            } catch {
                exited.leave()
                _ = sb_close(fds[0])
                _ = sb_close(fds[1])
                throw error
            }
            _ = sb_close(fds[1])
            socket = fds[0]
            // A worker too starved to read holds a write (and the lock) at most this long; the
            // attempt is then lost, and fails at its deadline.
            _ = sb_set_send_timeout(socket, Int32(Self.sendTimeoutMs))
        }

        static let sendTimeoutMs = 2000

        /// Queues `frame`; `true` when the caller must start a ``drain()`` (none runs).
        func enqueue(_ frame: [UInt8]) -> Bool {
            queueLock.withLock {
                queued += frame
                defer { draining = true }
                return !draining
            }
        }

        /// Writes what is queued, in bursts, until nothing is. A worker that is gone, or too
        /// starved to read for 2 s, loses a burst (its attempts fail at their deadline or when
        /// the worker's end is read).
        func drain() {
            while true {
                let burst: [UInt8] = queueLock.withLock {
                    defer { queued = [] }
                    if queued.isEmpty { draining = false }
                    return queued
                }
                guard !burst.isEmpty else { return }
                lock.withLock {
                    guard open else { return }
                    _ = SocketIO.send(burst, on: socket)
                }
            }
        }

        /// Waits until the process exits, at most `wait`; then kills it (SIGKILL: a signal it
        /// cannot block, as a child of a dispatch thread starts with most blocked) and waits.
        func end(after wait: Duration) {
            if exited.wait(timeout: .now() + .milliseconds(Int(wait.milliseconds))) == .timedOut {
                kill(process.processIdentifier, SIGKILL)
                exited.wait()
            }
        }

        /// No more attempts: the worker drains and exits.
        func closeInput() {
            lock.withLock { if open { _ = sb_shutdown_write(socket) } }
        }

        func closeSocket() {
            lock.withLock {
                guard open else { return }
                open = false
                _ = sb_close(socket)
            }
        }
    }
}
