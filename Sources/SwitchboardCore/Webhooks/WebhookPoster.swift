import Foundation

/// Posts one attempt of a webhook message (the delivery worker's port): the production poster
/// is `SwitchboardWebhooks.WebhookSender` (async-http-client), tests use
/// `ScriptedWebhookPoster`. Callback-based, so an attempt costs no task of its own.
public protocol WebhookPoster: Sendable {
    /// POSTs `message.body`, signed with `keys` (current first), to `url`, within `timeout`, and
    /// calls `completion` exactly once, on any thread, with how it ended.
    func post(
        _ message: WebhookMessage, to url: String, keys: [[UInt8]], now: Date, timeout: Duration,
        completion: @escaping @Sendable (WebhookScheduler.Outcome) -> Void)
}
