import AsyncHTTPClient
import Foundation
import Logging
import NIOCore
import SwitchboardCore

/// Makes webhook attempts: one signed `POST` per call of ``send(_:to:secrets:now:timeout:)``,
/// over one shared async-http-client client on its own event loops (never the signaling or call
/// queues). What to send when is ``WebhookScheduler``'s decision; the sender only reports how the
/// attempt ended.
///
/// The client verifies TLS certificates (async-http-client's default, never turned off), follows
/// no redirects (a 3xx is the answer, and a failure to the scheduler), and fails a refused
/// connection at once instead of retrying it until the deadline: the scheduler's backoff retries.
public struct WebhookSender: Sendable {
    /// The `user-agent` of every attempt.
    public static let userAgent = "Switchboard-Webhooks/1"

    let client: HTTPClient
    /// The most of an answer's body read (and discarded) before the connection is dropped.
    let maximumResponseBody: Int
    let logger: Logger

    /// A sender with a client of its own; call ``shutdown()`` when done. `connectTimeout` bounds
    /// connection establishment (TCP and TLS) within each attempt's own timeout.
    public init(connectTimeout: Duration = .seconds(5), maximumResponseBody: Int = 16 << 10, logger: Logger = Logger(label: "switchboard.webhooks")) {
        var configuration = HTTPClient.Configuration(
            redirectConfiguration: .disallow, timeout: .init(connect: TimeAmount(connectTimeout), read: nil))
        configuration.connectionPool.retryConnectionEstablishment = false
        self.client = HTTPClient(eventLoopGroupProvider: .singleton, configuration: configuration)
        self.maximumResponseBody = max(0, maximumResponseBody)
        self.logger = logger
    }

    /// Closes the client's connections; attempts in flight fail. Call once, when the delivery
    /// worker stops.
    public func shutdown() async {
        do { try await client.shutdown() } catch { logger.debug("webhook client shutdown", metadata: ["error": "\(error)"]) }
    }

    /// POSTs `message.body` to `url`, signed with each of `secrets`' key bytes (the current key
    /// first, then the previous one during a rotation) at `now` (`webhook-timestamp`), and
    /// reports the answer's status, or `.failed` when there was none within `timeout` (for the
    /// whole attempt: connection, request, answer head and reading the answer's body), or the
    /// connection failed. Without secrets nothing is sent: `.failed`.
    public func send(_ message: WebhookMessage, to url: String, secrets: [[UInt8]], now: Date, timeout: Duration) async -> WebhookScheduler.Outcome {
        guard !secrets.isEmpty else { return .failed("no signing secret") }
        let body = message.body
        var request = HTTPClientRequest(url: url)
        request.method = .POST
        request.headers.add(name: "content-type", value: "application/json")
        request.headers.add(name: "user-agent", value: Self.userAgent)
        for header in WebhookSignature.headers(id: message.id, body: body, keys: secrets, now: now) {
            request.headers.add(name: header.name, value: header.value)
        }
        request.body = .bytes(ByteBuffer(bytes: body))
        let end = ContinuousClock.now + timeout
        let outcome: WebhookScheduler.Outcome
        do {
            let response = try await client.execute(request, deadline: .now() + TimeAmount(timeout))
            outcome = .status(Int(response.status.code))
            await drain(response.body, until: end)
        } catch {
            outcome = .failed(Self.describe(error, timeout: timeout))
        }
        logger.debug("webhook attempt", metadata: ["webhook_id": "\(message.id)", "outcome": "\(outcome)"])
        return outcome
    }

    /// Reads and discards up to ``maximumResponseBody`` bytes of the answer, until `deadline`:
    /// the status is the answer, the body only lets the connection be reused. Stopping early
    /// drops the rest, and the connection with it.
    private func drain(_ body: HTTPClientResponse.Body, until deadline: ContinuousClock.Instant) async {
        let cap = maximumResponseBody
        await withTaskGroup(of: Void.self) { group in
            group.addTask {
                var read = 0
                do {
                    for try await chunk in body {
                        read += chunk.readableBytes
                        if read >= cap { return }
                    }
                } catch {
                    // A body cut short does not change the status already received.
                }
            }
            group.addTask { try? await Task.sleep(until: deadline, clock: .continuous) }
            await group.next()
            group.cancelAll()
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
