import Foundation
import SwitchboardCore

/// The in-memory twin of the libwebsockets transport: records every command, refuses sends to
/// connections a test marks as full, and lets a test wait for commands.
public final class InMemoryTransport: OutboundTransport, @unchecked Sendable {
    private let condition = NSCondition()
    private var recorded: [OutboundCommand] = []
    private var full: Set<ConnectionID> = []
    private var handled: [TransportEvent] = []

    public init() {}

    public func submit(_ commands: [OutboundCommand]) -> Set<ConnectionID> {
        condition.lock()
        defer {
            condition.broadcast()
            condition.unlock()
        }
        var refused: Set<ConnectionID> = []
        for command in commands {
            if case .send(let id, _) = command, full.contains(id) {
                refused.insert(id)
                continue
            }
            recorded.append(command)
        }
        return refused
    }

    public func processed(_ events: [TransportEvent]) {
        condition.withLock {
            handled += events
            condition.broadcast()
        }
    }

    /// Every delivered event the application reported handled, in order.
    public var processedEvents: [TransportEvent] { condition.withLock { handled } }

    /// From now on sends to `connection` are refused, as if its outbox were full.
    public func markFull(_ connection: ConnectionID) {
        condition.withLock { _ = full.insert(connection) }
    }

    /// Every command so far, in order.
    public var commands: [OutboundCommand] { condition.withLock { recorded } }

    /// Removes and returns every command so far.
    public func drain() -> [OutboundCommand] {
        condition.withLock {
            defer { recorded = [] }
            return recorded
        }
    }

    /// Waits until at least `count` commands were recorded or `timeout` passes.
    public func waitForCommands(count: Int, timeout: Duration = .seconds(5)) -> [OutboundCommand] {
        let deadline = Date(timeIntervalSinceNow: Double(timeout.milliseconds) / 1000)
        condition.lock()
        defer { condition.unlock() }
        while recorded.count < count, condition.wait(until: deadline) {}
        return recorded
    }
}
