import Dispatch
import SwitchboardCore

/// A ``WebhookExecutor`` on a serial dispatch queue: the tests' worker context, and any host's
/// without an event loop of its own to offer.
public struct DispatchWebhookExecutor: WebhookExecutor {
    public let queue: DispatchQueue
    private let key = DispatchSpecificKey<Bool>()

    public init(label: String = "switchboard.webhooks") {
        queue = DispatchQueue(label: label)
        queue.setSpecific(key: key, value: true)
    }

    public func execute(_ work: @escaping @Sendable () -> Void) {
        queue.async(execute: work)
    }

    public func schedule(after delay: Duration, _ work: @escaping @Sendable () -> Void) -> any WebhookScheduledWork {
        let item = DispatchWorkItem(block: work)
        let nanoseconds = max(0, delay.components.seconds) * 1_000_000_000 + max(0, delay.components.attoseconds / 1_000_000_000)
        queue.asyncAfter(deadline: .now() + .nanoseconds(Int(clamping: nanoseconds)), execute: item)
        return Scheduled(item: item)
    }

    public var isCurrent: Bool { DispatchQueue.getSpecific(key: key) == true }

    private struct Scheduled: WebhookScheduledWork, @unchecked Sendable {
        // DispatchWorkItem is thread-safe; it is not marked Sendable on Linux.
        let item: DispatchWorkItem
        func cancel() { item.cancel() }
    }
}

extension WebhookExecutor {
    /// Runs `work` on the executor and returns its result once it ran; in place when the caller
    /// is on the executor already.
    public func sync<T>(_ work: () -> T) -> T {
        if isCurrent { return work() }
        return withoutActuallyEscaping(work) { work in
            let call = SyncCall(work)
            execute { call.run() }
            call.done.wait()
            return call.result!
        }
    }
}

/// One ``WebhookExecutor/sync(_:)`` call: the caller waits on `done` while the executor runs
/// `work`, so the closure and the result are never touched by two threads at once. The closure
/// is dropped before `done` is signalled: it must not outlive the caller's frame, and the
/// executor may release the item that holds this object later.
private final class SyncCall<T>: @unchecked Sendable {
    private var work: (() -> T)?
    var result: T?
    let done = DispatchSemaphore(value: 0)

    init(_ work: @escaping () -> T) { self.work = work }

    func run() {
        result = work?()
        work = nil
        done.signal()
    }
}
