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

    /// The port the listener is bound to (the configured one, or the one the kernel picked for 0).
    public private(set) var boundPort: Int = 0

    public init(configuration: TransportConfiguration, logger: Logger) {
        self.configuration = configuration
        self.logger = logger
    }

    /// Binds the listeners and starts the service threads.
    public func start(sink: any TransportEventSink) throws {
        _ = sb_raise_nofile_limit()
        lws_set_log_level(Int32(LLL_ERR), nil)
        var port = configuration.port
        for index in 0..<max(1, configuration.serviceThreads) {
            let fd = sb_listen_tcp(configuration.host, Int32(port), Int32(configuration.listenBacklog))
            guard fd >= 0 else {
                stop()
                throw TransportError("cannot listen on \(configuration.host):\(port): \(String(cString: sb_strerror(-fd)))")
            }
            if index == 0 { port = Int(sb_local_port(fd)) }
            let thread = ServiceThread(index: index, listenFD: fd, configuration: configuration, sink: sink, logger: logger)
            do {
                try thread.start()
            } catch {
                _ = sb_close(fd)
                stop()
                throw error
            }
            lock.withLock { threads.append(thread) }
        }
        boundPort = port
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

    /// Stops every service thread and destroys their contexts. Idempotent.
    public func stop() {
        let threads: [ServiceThread] = lock.withLock {
            guard !stopped else { return [] }
            stopped = true
            return self.threads
        }
        for thread in threads { thread.mailbox.requestStop() }
        for thread in threads { thread.waitUntilFinished() }
    }
}
