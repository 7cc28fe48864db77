/// Where the webhook delivery worker runs (ADR 0011): one serial context owning the worker's
/// state. The daemon uses the HTTP client's own event-loop thread, so an attempt is started, and
/// its answer taken, on the thread that does the I/O, with no hop between threads; tests and
/// hosts without that client use `SwitchboardApp.DispatchWebhookExecutor`.
public protocol WebhookExecutor: Sendable {
    /// Runs `work` later, after everything submitted before it. Never makes the caller wait for
    /// the work: the call hub hands messages over from a call thread.
    func execute(_ work: @escaping @Sendable () -> Void)

    /// Runs `work` after `delay` (wall time), unless the handle is cancelled first.
    func schedule(after delay: Duration, _ work: @escaping @Sendable () -> Void) -> any WebhookScheduledWork

    /// Whether the caller runs on the executor now.
    var isCurrent: Bool { get }
}

/// Work scheduled on a ``WebhookExecutor``.
public protocol WebhookScheduledWork: Sendable {
    /// The work does not run if it has not started yet.
    func cancel()
}
