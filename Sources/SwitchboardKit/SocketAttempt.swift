import Foundation
import Logging
import NIOWebSocket
import Synchronization
import WSClient

/// One socket attempt, which always ends. WSClient's upgrade waits on a future that task
/// cancellation does not reach, so a balancer or host that takes the connection and never
/// answers would hold the attempt, and the client's reconnecting, for good. Here an attempt not
/// upgraded within `deadline` (or when the caller's task is cancelled) is abandoned: ``run``
/// returns `nil` at once, and if the upgrade ever completes the socket is closed unused. The
/// abandoned connection stays open until the other end closes it.
final class SocketAttempt: Sendable {
    typealias Outcome = Result<WebSocketCloseFrame?, any Error>

    private struct State {
        var upgraded = false
        var abandoned = false
        var continuation: CheckedContinuation<Outcome?, Never>?
        var socket: Task<Void, Never>?
        var timer: Task<Void, Never>?
    }

    private let state = Mutex(State())

    /// Connects to `url` and runs `handler` once upgraded; the close frame or the error, or `nil`
    /// when the attempt was abandoned.
    static func run(
        url: String, deadline: Duration, logger: Logger,
        handler: @escaping @Sendable (WebSocketInboundStream, WebSocketOutboundWriter) async throws -> Void
    ) async -> Outcome? {
        let attempt = SocketAttempt()
        return await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                attempt.start(continuation, url: url, deadline: deadline, logger: logger, handler: handler)
            }
        } onCancel: {
            attempt.cancel()
        }
    }

    private func start(
        _ continuation: CheckedContinuation<Outcome?, Never>, url: String, deadline: Duration, logger: Logger,
        handler: @escaping @Sendable (WebSocketInboundStream, WebSocketOutboundWriter) async throws -> Void
    ) {
        let cancelledFirst = state.withLock { state in
            state.continuation = continuation
            return state.abandoned
        }
        if cancelledFirst { return finish(nil) }
        let timer = Task {
            do { try await Task.sleep(for: deadline) } catch { return }
            self.abandonIfNotUpgraded()
        }
        let socket = Task {
            let outcome: Outcome
            do {
                outcome = .success(
                    try await WebSocketClient.connect(url: url, configuration: .init(maxFrameSize: 16 << 20), logger: logger) { inbound, writer, _ in
                        guard self.markUpgraded() else {
                            try await writer.close(.goingAway, reason: "abandoned")
                            return
                        }
                        try await handler(inbound, writer)
                    })
            } catch {
                outcome = .failure(error)
            }
            self.state.withLock { $0.timer }?.cancel()
            self.finish(outcome)
        }
        state.withLock { state in
            state.timer = timer
            state.socket = socket
        }
    }

    /// The caller's task was cancelled: a socket still upgrading is abandoned; an upgraded one
    /// ends with its task.
    private func cancel() {
        abandonIfNotUpgraded()
        state.withLock { $0.socket }?.cancel()
    }

    private func abandonIfNotUpgraded() {
        let abandoned = state.withLock { state in
            guard !state.upgraded else { return false }
            state.abandoned = true
            return true
        }
        if abandoned { finish(nil) }
    }

    /// Marks the attempt upgraded; `false` when it was abandoned first (close the socket).
    private func markUpgraded() -> Bool {
        state.withLock { state in
            guard !state.abandoned else { return false }
            state.upgraded = true
            return true
        }
    }

    /// Resumes the caller once, whoever comes first.
    private func finish(_ outcome: Outcome?) {
        state.withLock { $0.continuation.take() }?.resume(returning: outcome)
    }
}
