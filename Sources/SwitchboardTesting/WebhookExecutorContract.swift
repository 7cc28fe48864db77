import Dispatch
import Foundation
import SwitchboardApp
import SwitchboardCore

/// What every ``WebhookExecutor`` does, checked the same way for each implementation (the
/// dispatch queue of the tests, the HTTP client's event loop of the daemon): each test class
/// calls every check with its own executor and asserts that it found no problem. (A library
/// linked by the tests only, so it reports problems rather than importing XCTest.)
public struct WebhookExecutorContract {
    public let executor: any WebhookExecutor

    public init(_ executor: any WebhookExecutor) {
        self.executor = executor
    }

    /// Work runs one item at a time, in the order submitted, on the executor.
    public func checkOrderAndCurrent() -> [String] {
        var problems: [String] = []
        func expect(_ condition: Bool, _ problem: String) { if !condition { problems.append(problem) } }
        let log = Log()
        let done = DispatchSemaphore(value: 0)
        expect(!executor.isCurrent, "isCurrent is true on the test thread")
        for index in 0..<200 {
            executor.execute { [executor] in
                log.append(index, current: executor.isCurrent)
                if index == 199 { done.signal() }
            }
        }
        expect(done.wait(timeout: .now() + 10) == .success, "200 items did not all run within 10 s")
        expect(log.values == Array(0..<200), "items ran out of order: \(log.values.prefix(20))…")
        expect(log.allCurrent, "an item ran with isCurrent false")
        return problems
    }

    /// `sync` returns the work's result, from another thread and from the executor itself.
    public func checkSync() -> [String] {
        var problems: [String] = []
        func expect(_ condition: Bool, _ problem: String) { if !condition { problems.append(problem) } }
        var local = 0
        let value = executor.sync { () -> Int in
            local = 41
            return local + 1
        }
        expect(value == 42, "sync returned \(value), not 42")
        expect(local == 41, "the work's write to a local was lost")
        let nested = executor.sync { [executor] in executor.sync { executor.isCurrent } }
        expect(nested, "sync called on the executor did not run in place")
        return problems
    }

    /// Scheduled work runs after its delay; cancelled work does not run.
    public func checkScheduleAndCancel() -> [String] {
        var problems: [String] = []
        func expect(_ condition: Bool, _ problem: String) { if !condition { problems.append(problem) } }
        let log = Log()
        let fired = DispatchSemaphore(value: 0)
        let start = DispatchTime.now()
        let cancelled = executor.schedule(after: .milliseconds(20)) { log.append(1, current: true) }
        cancelled.cancel()
        _ = executor.schedule(after: .milliseconds(50)) { [executor] in
            log.append(2, current: executor.isCurrent)
            fired.signal()
        }
        expect(fired.wait(timeout: .now() + 10) == .success, "scheduled work did not run within 10 s")
        let waited = Double(DispatchTime.now().uptimeNanoseconds - start.uptimeNanoseconds) / 1e6
        expect(waited >= 50, "scheduled work ran after \(waited) ms, before its 50 ms delay")
        // Anything the cancelled item could still do would run before this item.
        executor.sync {}
        expect(log.values == [2], "ran \(log.values), not [2]: cancelled work ran")
        expect(log.allCurrent, "scheduled work ran off the executor")
        return problems
    }

    private final class Log: @unchecked Sendable {
        private let lock = NSLock()
        private var items: [(Int, Bool)] = []

        func append(_ value: Int, current: Bool) {
            lock.withLock { items.append((value, current)) }
        }

        var values: [Int] { lock.withLock { items.map(\.0) } }
        var allCurrent: Bool { lock.withLock { items.allSatisfy(\.1) } }
    }
}
