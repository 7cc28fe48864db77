import Dispatch

/// Runs async work from synchronous code that may block (start-up, admin handlers on GCD
/// threads). Never call it from the cooperative pool's own threads in a loop.
enum Blocking {
    static func wait<T: Sendable>(_ body: @escaping @Sendable () async -> T) -> T {
        let box = Box<T>()
        let done = DispatchSemaphore(value: 0)
        Task {
            box.value = await body()
            done.signal()
        }
        done.wait()
        guard let value = box.value else { preconditionFailure("the task signalled without a value") }
        return value
    }

    /// Written by the task before it signals; read after the wait returns.
    private final class Box<T>: @unchecked Sendable {
        var value: T?
    }
}
