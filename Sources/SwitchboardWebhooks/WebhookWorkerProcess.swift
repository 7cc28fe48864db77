import CSwitchboardShims
import Dispatch
import Foundation
import Logging
import SwitchboardCore
import Synchronization

/// The delivery worker process (`switchboard webhook-worker`, started by the daemon; ADR 0011).
/// Every thread of it runs under Linux's SCHED_IDLE policy, so its HTTP work takes only CPU the
/// daemon's calls leave idle. That is safe here and only here: a thread passes its policy on to
/// the threads it starts, and in this process no thread ever runs a call.
///
/// It reads attempts from `input` (``WebhookWorkerWire/Attempt``: a header line, then the
/// body), makes each with a ``WebhookSender``, and writes one ``WebhookWorkerWire/Answer`` per
/// attempt to `output`, in the order they end. At the end of its input it lets the attempts in
/// flight end (at most `drain`) and returns its exit status: 0; 1 after an unreadable attempt
/// (it stops reading there); 2 when its input is not a socket (run by hand).
public enum WebhookWorkerProcess {
    public static func run(
        input: Int32 = 0, output: Int32 = 1, connectionsPerHost: Int, idle: Bool = true, drain: Duration = .seconds(5), logger: Logger
    ) async -> Int32 {
        let exitCode = Mutex<Int32>(0)
        // Spawned from a dispatch thread of the daemon, the worker starts with most signals
        // blocked: SIGTERM (systemd's stop, an operator's kill) would never reach it.
        let taken = sb_take_signals()
        if taken < 0 { logger.warning("the webhook worker could not unblock signals", metadata: ["errno": "\(-taken)"]) }
        if idle {
            let changed = sb_process_set_idle_policy()
            if changed < 0 { logger.warning("the webhook worker could not lower its priority", metadata: ["errno": "\(-changed)"]) }
        }
        let sender = WebhookSender(connectionsPerHost: connectionsPerHost, logger: logger)
        let writer = AnswerWriter(fd: output)
        let inFlight = DispatchGroup()
        await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
            let reading = Thread {
                var reader = LineReader(fd: input)
                reading: while true {
                    let attempt: WebhookWorkerWire.Attempt
                    switch WebhookWorkerWire.Attempt.read(from: &reader) {
                    case .attempt(let read): attempt = read
                    case .end: break reading
                    case .unreadable(let bytes):
                        // Where the next attempt would start is unknown: the worker ends, and
                        // the daemon fails what it held and starts another.
                        logger.error("the webhook worker got an unreadable attempt and stops reading", metadata: ["bytes": "\(bytes)"])
                        exitCode.withLock { $0 = 1 }
                        break reading
                    }
                    inFlight.enter()
                    start(attempt, with: sender) { outcome in
                        writer.write(WebhookWorkerWire.Answer(n: attempt.n, outcome))
                        inFlight.leave()
                    }
                }
                if reader.failure == -Int(ENOTSOCK) {
                    logger.error("switchboard webhook-worker is started by the daemon (webhooks.worker_process); its standard input must be the daemon's socket")
                    exitCode.withLock { $0 = 2 }
                }
                if inFlight.wait(timeout: .now() + .milliseconds(Int(drain.components.seconds * 1000))) == .timedOut {
                    logger.notice("the webhook worker stops with attempts in flight; the daemon sends them again")
                }
                done.resume()
            }
            reading.name = "webhook-worker-reader"
            reading.start()
        }
        await sender.shutdown()
        return exitCode.withLock { $0 }
    }

    private static func start(
        _ attempt: WebhookWorkerWire.Attempt, with sender: WebhookSender, completion: @escaping @Sendable (WebhookScheduler.Outcome) -> Void
    ) {
        let keys = attempt.keys.compactMap { Data(base64Encoded: $0).map(Array.init) }
        guard keys.count == attempt.keys.count else { return completion(.failed("the delivery worker got an unreadable key")) }
        sender.send(
            id: attempt.id, body: attempt.body, to: attempt.url, secrets: keys,
            now: Date(timeIntervalSince1970: Double(attempt.now) / 1000), timeout: .milliseconds(attempt.timeoutMs), completion: completion)
    }

    /// Writes answers, whole lines, from any thread.
    private final class AnswerWriter: @unchecked Sendable {
        let fd: Int32
        private let lock = NSLock()

        init(fd: Int32) {
            self.fd = fd
        }

        func write(_ answer: WebhookWorkerWire.Answer) {
            let line = answer.line
            // A failed write means the daemon is gone; its next worker sends the attempt again.
            lock.withLock { _ = SocketIO.send(line, on: fd) }
        }
    }
}
