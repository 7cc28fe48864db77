import Dispatch
import Logging
import Synchronization

/// The daemon's stop after the drain, one named step at a time. Each step runs on a thread of
/// its own and is waited for up to `bound`: a step that takes long is logged with its time, and
/// one still running at the bound is logged by name and left behind, so a store or bus that stopped
/// answering (PostgreSQL gone first) neither holds the process past its stop nor hides which
/// step it was. Steps run in order; a step left behind may still finish while later ones run.
final class ShutdownSteps: Sendable {
    let bound: Duration
    /// A step that takes longer than this is logged (at notice) when it ends.
    let slow: Duration
    private let logger: Logger
    private let overran = Mutex<[String]>([])

    init(bound: Duration, slow: Duration = .seconds(1), logger: Logger) {
        self.bound = bound
        self.slow = slow
        self.logger = logger
    }

    /// The steps that were still running at their bound, in order.
    var leftBehind: [String] { overran.withLock { $0 } }

    /// Runs `body` and waits for it up to ``bound``; whether it finished in time.
    @discardableResult
    func run(_ step: String, _ body: @escaping @Sendable () -> Void) -> Bool {
        let done = DispatchSemaphore(value: 0)
        let clock = ContinuousClock()
        let began = clock.now
        logger.debug("stopping", metadata: ["step": "\(step)"])
        DispatchQueue.global().async {
            body()
            done.signal()
        }
        let (seconds, attoseconds) = bound.components
        let nanoseconds = Int(clamping: seconds) &* 1_000_000_000 &+ Int(attoseconds / 1_000_000_000)
        guard done.wait(timeout: .now() + .nanoseconds(max(0, nanoseconds))) == .success else {
            overran.withLock { $0.append(step) }
            logger.error(
                "a stop step did not finish in time; stopping without waiting for it",
                metadata: ["step": "\(step)", "waited_seconds": "\(Self.seconds(bound))"])
            return false
        }
        let took = clock.now - began
        if took > slow {
            logger.notice("a stop step took long", metadata: ["step": "\(step)", "seconds": "\(Self.seconds(took))"])
        }
        return true
    }

    /// A duration in seconds to the millisecond, for the log.
    static func seconds(_ duration: Duration) -> String {
        let (seconds, attoseconds) = duration.components
        let milliseconds = seconds * 1000 + attoseconds / 1_000_000_000_000_000
        let fraction = String(milliseconds % 1000)
        return "\(milliseconds / 1000)." + String(repeating: "0", count: 3 - fraction.count) + fraction
    }
}
