import CLibWebSockets
import CSwitchboardShims
import Foundation
import Logging
import SwitchboardCore

/// The libwebsockets transport: WebSocket endpoints and plain HTTP on one listener, served by
/// one or more service threads (one lws context each, sharing the port through SO_REUSEPORT).
///
/// Events go to the ``TransportEventSink`` in batches, one per service round; commands come in
/// through ``submit(_:)`` from any thread.
public final class LWSServer: OutboundTransport, @unchecked Sendable {
    private let configuration: TransportConfiguration
    private let logger: Logger
    private var threads: [ServiceThread] = []
    private let lock = NSLock()
    private var stopped = false

    private var boundPorts: [ListenerRole: Int] = [:]
    private let gate: AddressGate
    private let partialMessages: PartialMessageBudget

    /// Told of every close the transport itself decides (1009, and 1001 when draining); closes
    /// the application asks for are its own to count.
    private let onClose: (@Sendable (CloseCode) -> Void)?

    public init(configuration: TransportConfiguration, logger: Logger, onClose: (@Sendable (CloseCode) -> Void)? = nil) {
        self.configuration = configuration
        self.logger = logger
        self.onClose = onClose
        self.partialMessages = PartialMessageBudget(limit: configuration.partialMessageBytes)
        self.gate = AddressGate(maxConnections: configuration.maxConnectionsPerAddress, maxPending: configuration.maxPendingPerAddress)
    }

    /// The port a listener is bound to (the configured one, or the one the kernel picked for 0).
    public func boundPort(of role: ListenerRole) -> Int? {
        lock.withLock { boundPorts[role] }
    }

    /// Binds the listeners and starts the service threads.
    public func start(sink: any TransportEventSink) throws {
        _ = sb_raise_nofile_limit()
        lws_set_log_level(Int32(LLL_ERR), nil)
        // SO_REUSEPORT lets any process of this user join a port: check first that nobody holds
        // it, so only this process's threads share it (a fixed port only; 0 is always fresh).
        for listener in configuration.listeners where listener.port != 0 {
            let taken = sb_port_taken(listener.host, Int32(listener.port))
            if taken == -EADDRINUSE {
                throw TransportError("cannot listen on \(listener.host):\(listener.port) (\(listener.role.rawValue)): the port is already in use by another process")
            }
        }
        var ports = Dictionary(uniqueKeysWithValues: configuration.listeners.map { ($0.role, $0.port) })
        let shared = configuration.listeners.filter(\.onEveryServiceThread)
        var plan = Array(repeating: shared, count: shared.isEmpty ? 0 : max(1, configuration.serviceThreads))
        plan += configuration.listeners.filter { !$0.onEveryServiceThread }.map { [$0] }
        for (index, listeners) in plan.enumerated() {
            var bound: [BoundListener] = []
            do {
                for listener in listeners {
                    let fd = try bind(listener, port: ports[listener.role] ?? listener.port)
                    ports[listener.role] = Int(sb_local_port(fd))
                    bound.append(BoundListener(configuration: listener, fd: fd))
                }
                let thread = ServiceThread(
                    index: index, listeners: bound, configuration: configuration, gate: gate, partialMessages: partialMessages, sink: sink, logger: logger, onClose: onClose)
                try thread.start()
                lock.withLock { threads.append(thread) }
            } catch {
                stop()
                throw error
            }
        }
        lock.withLock { boundPorts = ports }
    }

    private func bind(_ listener: ListenerConfiguration, port: Int) throws -> Int32 {
        let fd = sb_listen_tcp(listener.host, Int32(port), Int32(configuration.listenBacklog))
        guard fd >= 0 else {
            throw TransportError("cannot listen on \(listener.host):\(port) (\(listener.role.rawValue)): \(String(cString: sb_strerror(-fd)))")
        }
        return fd
    }

    /// Queues commands; returns the connections refused for a full outbox.
    public func submit(_ commands: [OutboundCommand]) -> Set<ConnectionID> {
        let threads = lock.withLock { self.threads }
        if threads.count == 1 { return threads[0].mailbox.post(commands) }
        var byThread = [[OutboundCommand]](repeating: [], count: threads.count)
        for command in commands where command.connection.thread < threads.count {
            byThread[command.connection.thread].append(command)
        }
        var refused: Set<ConnectionID> = []
        for (index, batch) in byThread.enumerated() where !batch.isEmpty {
            refused.formUnion(threads[index].mailbox.post(batch))
        }
        return refused
    }

    /// Reports a delivered batch handled, so paused sockets may be read again.
    public func processed(_ events: [TransportEvent]) {
        let threads = lock.withLock { self.threads }
        if threads.count == 1 { return threads[0].mailbox.handled(events) }
        var byThread = [[TransportEvent]](repeating: [], count: threads.count)
        for event in events {
            guard case .message(let id, _, _) = event, id.thread < threads.count else { continue }
            byThread[id.thread].append(event)
        }
        for (index, batch) in byThread.enumerated() where !batch.isEmpty {
            threads[index].mailbox.handled(batch)
        }
    }

    /// Whether the listeners are up: started and not stopped.
    public var isRunning: Bool {
        lock.withLock { !threads.isEmpty && !stopped }
    }

    /// Open WebSockets across all service threads.
    public var webSocketCount: Int {
        lock.withLock { threads }.reduce(0) { $0 + $1.mailbox.webSocketCount }
    }

    /// Stops accepting, asks every WebSocket to close with `code`, and waits up to `timeout` for
    /// them to go. Returns whether every socket closed in time.
    public func drain(code: CloseCode = .goingAway, timeout: Duration) -> Bool {
        let threads = lock.withLock { self.threads }
        let seconds = Int32(clamping: max(1, (timeout.milliseconds + 999) / 1000))
        for thread in threads { thread.mailbox.post(.drain(code, seconds: seconds)) }
        let deadline = Date(timeIntervalSinceNow: Double(timeout.milliseconds) / 1000)
        return threads.allSatisfy { $0.mailbox.waitForWebSocketsToClose(until: deadline) }
    }

    /// Testing only: blocks service thread `index` until `release` is signalled.
    public func stallForTesting(thread index: Int, until release: DispatchSemaphore) {
        let threads = lock.withLock { self.threads }
        guard threads.indices.contains(index) else { return }
        threads[index].mailbox.post(.stall(release))
    }

    /// Service threads whose loop has not turned for `threshold` (they turn at least every
    /// 100 ms when healthy): a thread stuck in a callback serves nobody.
    public func stalledThreads(threshold: Duration = .seconds(5)) -> [Int] {
        let threads = lock.withLock { self.threads }
        let now = ServiceThread.now()
        return threads.filter { now.since(MonotonicTime(nanoseconds: $0.lastTurn.load(ordering: .relaxed))) > threshold }.map(\.index)
    }

    /// Stops every service thread and destroys their contexts, waiting up to `timeout` for
    /// each. Returns the indices of threads that did not stop in time (stuck), which are left
    /// behind. Idempotent.
    @discardableResult
    public func stop(timeout: Duration = .seconds(10)) -> [Int] {
        let threads: [ServiceThread] = lock.withLock {
            guard !stopped else { return [] }
            stopped = true
            return self.threads
        }
        for thread in threads { thread.mailbox.requestStop() }
        let deadline = DispatchTime.now() + .milliseconds(Int(timeout.milliseconds))
        return threads.filter { !$0.waitUntilFinished(until: deadline) }.map(\.index)
    }
}
