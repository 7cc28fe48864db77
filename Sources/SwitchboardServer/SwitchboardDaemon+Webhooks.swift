import CoreMetrics
import Foundation
import SwitchboardApp
import SwitchboardCore
import SwitchboardStore
import SwitchboardWebhooks

extension SwitchboardDaemon {
    /// The delivery worker and its HTTP client. Built whenever the call protocol is on (the
    /// admin API lists deliveries and devices even with no endpoint configured); it sends
    /// nothing until an endpoint is.
    func makeWebhooks(store: SQLiteStore, factory: any MetricsFactory) -> (dispatcher: WebhookDispatcher, sender: WebhookSender) {
        let settings = configuration.webhooks
        let sender = WebhookSender(connectionsPerHost: settings.maxInFlight, logger: logger)
        let dispatcher = WebhookDispatcher(
            settings: settings, store: store, poster: sender, executor: sender.executor, wallClock: { [wall = clocks.wall] in CallHub.roundedToMilliseconds(wall()) },
            metricsFactory: factory, logger: logger)
        return (dispatcher, sender)
    }

    /// Stops starting attempts, waits a little for those in flight (their outcomes are
    /// committed), then closes the HTTP client. What is still in flight is sent again at the
    /// next start: at least once.
    func stopWebhooks() {
        guard let (dispatcher, sender) = lockedWebhooks() else { return }
        dispatcher.stop()
        if !dispatcher.waitForIdle(timeout: .now() + .seconds(2)) {
            logger.notice("webhook attempts still in flight at stop; they are sent again at the next start")
        }
        Blocking.wait { await sender.shutdown() }
    }
}
