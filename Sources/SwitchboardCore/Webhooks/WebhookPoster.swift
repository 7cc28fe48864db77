import Foundation

/// Posts one attempt of a webhook message (the delivery worker's port): the production poster
/// is `SwitchboardWebhooks.WebhookSender` (async-http-client), tests use
/// `ScriptedWebhookPoster`.
public protocol WebhookPoster: Sendable {
    /// POSTs `message.body`, signed with `keys` (current first), to `url`, within `timeout`.
    func post(_ message: WebhookMessage, to url: String, keys: [[UInt8]], now: Date, timeout: Duration) async -> WebhookScheduler.Outcome
}
