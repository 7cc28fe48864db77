import AsyncHTTPClient
import Dispatch
import Foundation
import Logging
import NIOCore
import NIOHTTP1
import NIOPosix
import SwitchboardCore
import Synchronization

/// Makes webhook attempts: one signed `POST` per call of ``send(_:to:secrets:now:timeout:completion:)``,
/// over one shared async-http-client client on its own event loops (never the signaling or call
/// queues). What to send when is ``WebhookScheduler``'s decision; the sender only reports how the
/// attempt ended.
///
/// The client verifies TLS certificates (async-http-client's default, never turned off), follows
/// no redirects (a 3xx is the answer, and a failure to the scheduler), and fails a refused
/// connection at once instead of retrying it until the deadline: the scheduler's backoff retries.
/// An attempt is a request on the client's event loop with a delegate that reports the status
/// as soon as the answer's head arrives and discards the body: no Swift task, no buffering.
public struct WebhookSender: Sendable {
    /// The `user-agent` of every attempt.
    public static let userAgent = "Switchboard-Webhooks/1"

    let client: HTTPClient
    /// The client's event loop: one thread of its own, at the daemon's priority.
    let group: MultiThreadedEventLoopGroup
    let loop: any EventLoop
    let logger: Logger
    /// The client's event loop as the delivery worker's executor: the worker starts attempts
    /// and takes their answers on the thread that does the I/O.
    public let executor: EventLoopWebhookExecutor

    /// A sender with a client of its own; call ``shutdown()`` when done. `connectTimeout` bounds
    /// connection establishment (TCP and TLS) within each attempt's own timeout;
    /// `connectionsPerHost` should be the worker's attempts in flight per endpoint
    /// (`webhooks.max_in_flight`), so no attempt waits for a connection.
    ///
    /// The client's one event-loop thread keeps the priority of the thread that makes the
    /// sender. It must: a Linux thread passes its scheduling policy and nice value on to every
    /// thread it starts, and this one starts pool threads (the dispatch queues that commit
    /// outcomes, NIO's name resolution), which then run the call hub's work too (ADR 0011).
    public init(
        connectTimeout: Duration = .seconds(5), connectionsPerHost: Int = 16,
        logger: Logger = Logger(label: "switchboard.webhooks")
    ) {
        var configuration = HTTPClient.Configuration(
            redirectConfiguration: .disallow, timeout: .init(connect: TimeAmount(connectTimeout), read: nil))
        configuration.connectionPool = .init(idleTimeout: .seconds(60), concurrentHTTP1ConnectionsPerHostSoftLimit: max(1, connectionsPerHost))
        configuration.connectionPool.retryConnectionEstablishment = false
        group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        loop = group.next()
        executor = EventLoopWebhookExecutor(loop: loop)
        self.client = HTTPClient(eventLoopGroupProvider: .shared(group), configuration: configuration)
        self.logger = logger
    }

    /// Closes the client's connections and its event loop; attempts in flight fail. Call once,
    /// when the delivery worker stops.
    public func shutdown() async {
        do { try await client.shutdown() } catch { logger.debug("webhook client shutdown", metadata: ["error": "\(error)"]) }
        do { try await group.shutdownGracefully() } catch { logger.debug("webhook event loop shutdown", metadata: ["error": "\(error)"]) }
    }

    /// POSTs `message.body` to `url`, signed with each of `secrets`' key bytes (the current key
    /// first, then the previous one during a rotation) at `now` (`webhook-timestamp`), and
    /// calls `completion` once, on an event loop, with the answer's status, or `.failed` when
    /// there was none within `timeout` (connection, request and answer head) or the connection
    /// failed. Without secrets nothing is sent: `.failed`.
    public func send(
        _ message: WebhookMessage, to url: String, secrets: [[UInt8]], now: Date, timeout: Duration,
        completion: @escaping @Sendable (WebhookScheduler.Outcome) -> Void
    ) {
        send(id: message.id, body: message.body, to: url, secrets: secrets, now: now, timeout: timeout, completion: completion)
    }

    /// ``send(_:to:secrets:now:timeout:completion:)`` of a message already encoded: its
    /// `webhook-id` and body bytes (the delivery worker process gets them so).
    public func send(
        id: String, body: [UInt8], to url: String, secrets: [[UInt8]], now: Date, timeout: Duration,
        completion: @escaping @Sendable (WebhookScheduler.Outcome) -> Void
    ) {
        guard !secrets.isEmpty else { return completion(.failed("no signing secret")) }
        var headers = HTTPHeaders()
        headers.add(name: "content-type", value: "application/json")
        headers.add(name: "user-agent", value: Self.userAgent)
        for header in WebhookSignature.headers(id: id, body: body, keys: secrets, now: now) {
            headers.add(name: header.name, value: header.value)
        }
        let request: HTTPClient.Request
        do {
            request = try HTTPClient.Request(url: url, method: .POST, headers: headers, body: .bytes(body))
        } catch {
            return completion(.failed(Self.describe(error, timeout: timeout)))
        }
        let delegate = StatusDelegate(timeout: timeout, completion: completion)
        // The delegate on the worker's loop; the connection from the pool, whichever is idle (all
        // are on that one loop). Requiring the channel's loop as well made the pool open a
        // connection for nearly every attempt.
        let task = client.execute(
            request: request, delegate: delegate, eventLoop: .delegate(on: loop), deadline: .now() + TimeAmount(timeout), logger: logger)
        task.futureResult.whenFailure { error in delegate.fail(error) }
    }

    /// ``send(_:to:secrets:now:timeout:completion:)`` awaited.
    public func send(_ message: WebhookMessage, to url: String, secrets: [[UInt8]], now: Date, timeout: Duration) async -> WebhookScheduler.Outcome {
        await withCheckedContinuation { continuation in
            send(message, to: url, secrets: secrets, now: now, timeout: timeout) { continuation.resume(returning: $0) }
        }
    }

    /// A short reason for the delivery's `last_error`.
    static func describe(_ error: any Error, timeout: Duration) -> String {
        if let error = error as? HTTPClientError {
            if [.deadlineExceeded, .readTimeout, .connectTimeout].contains(error) { return "timed out after \(timeout)" }
            if [.remoteConnectionClosed, .cancelled].contains(error) { return "connection closed before an answer" }
            return "request failed: \(error)"
        }
        if error is CancellationError { return "cancelled" }
        return "connection failed: \(error)"
    }
}

extension WebhookSender: WebhookPoster {
    public func post(
        _ message: WebhookMessage, to url: String, keys: [[UInt8]], now: Date, timeout: Duration,
        completion: @escaping @Sendable (WebhookScheduler.Outcome) -> Void
    ) {
        send(message, to: url, secrets: keys, now: now, timeout: timeout, completion: completion)
    }
}

/// Reports an attempt's status once, at the answer's head, and discards the body (which only
/// lets the connection be reused, within the attempt's deadline).
final class StatusDelegate: HTTPClientResponseDelegate, Sendable {
    typealias Response = Void

    private let timeout: Duration
    /// The completion, taken by whichever of head, error or end comes first.
    private let completion: Mutex<(@Sendable (WebhookScheduler.Outcome) -> Void)?>

    init(timeout: Duration, completion: @escaping @Sendable (WebhookScheduler.Outcome) -> Void) {
        self.timeout = timeout
        self.completion = Mutex(completion)
    }

    private func report(_ outcome: WebhookScheduler.Outcome) {
        completion.withLock { taken in
            defer { taken = nil }
            return taken
        }?(outcome)
    }

    func fail(_ error: any Error) {
        report(.failed(WebhookSender.describe(error, timeout: timeout)))
    }

    func didReceiveHead(task: HTTPClient.Task<Void>, _ head: HTTPResponseHead) -> EventLoopFuture<Void> {
        report(.status(Int(head.status.code)))
        return task.eventLoop.makeSucceededVoidFuture()
    }

    func didReceiveBodyPart(task: HTTPClient.Task<Void>, _ buffer: ByteBuffer) -> EventLoopFuture<Void> {
        task.eventLoop.makeSucceededVoidFuture()
    }

    func didReceiveError(task: HTTPClient.Task<Void>, _ error: any Error) {
        fail(error)
    }

    func didFinishRequest(task: HTTPClient.Task<Void>) throws {
        report(.failed("the connection ended without an answer"))
    }
}

/// A ``WebhookExecutor`` on one NIO event loop (``WebhookSender/executor``).
public struct EventLoopWebhookExecutor: WebhookExecutor {
    let loop: any EventLoop

    init(loop: any EventLoop) {
        self.loop = loop
    }

    public func execute(_ work: @escaping @Sendable () -> Void) {
        loop.execute(work)
    }

    public func schedule(after delay: Duration, _ work: @escaping @Sendable () -> Void) -> any WebhookScheduledWork {
        Scheduled(task: loop.scheduleTask(in: TimeAmount(delay), work))
    }

    public var isCurrent: Bool { loop.inEventLoop }

    private struct Scheduled: WebhookScheduledWork {
        let task: NIOCore.Scheduled<Void>
        func cancel() { task.cancel() }
    }
}
