import CoreMetrics
import Foundation
import SwitchboardApp
import SwitchboardCore
import SwitchboardStore
import SwitchboardWebhooks

/// What makes the daemon's webhook attempts (``WebhookSettings/workerProcess``).
enum WebhookDeliveryClient: Sendable {
    /// The daemon's own HTTP client, on its event-loop thread, at the daemon's priority.
    case inProcess(WebhookSender)
    /// The worker process, all of whose threads run at idle priority.
    case workerProcess(ProcessWebhookPoster)

    func shutdown() {
        switch self {
        case .inProcess(let sender): Blocking.wait { await sender.shutdown() }
        case .workerProcess(let poster): poster.shutdown()
        }
    }
}

extension SwitchboardDaemon {
    /// The delivery worker and what makes its attempts. Built whenever the call protocol is on
    /// (the admin API lists deliveries and devices even with no endpoint configured); it sends
    /// nothing until an endpoint is. The worker process starts at the first attempt.
    func makeWebhooks(store: any DaemonStore, factory: any MetricsFactory) -> (dispatcher: WebhookDispatcher, client: WebhookDeliveryClient) {
        let settings = configuration.webhooks
        let client: WebhookDeliveryClient
        let poster: any WebhookPoster
        let executor: any WebhookExecutor
        if settings.workerProcess {
            let worker = ProcessWebhookPoster(
                executable: webhookWorkerExecutable, arguments: ["webhook-worker", "--connections-per-host", "\(settings.maxInFlight)"],
                logger: logger)
            (client, poster, executor) = (.workerProcess(worker), worker, DispatchWebhookExecutor())
        } else {
            let sender = WebhookSender(connectionsPerHost: settings.maxInFlight, logger: logger)
            (client, poster, executor) = (.inProcess(sender), sender, sender.executor)
        }
        let dispatcher = WebhookDispatcher(
            settings: settings, store: store, poster: poster, executor: executor, wallClock: { [wall = clocks.wall] in CallHub.roundedToMilliseconds(wall()) },
            metricsFactory: factory, logger: logger)
        return (dispatcher, client)
    }

    /// Stops starting attempts, waits a little for those in flight (their outcomes are
    /// committed), then ends the HTTP client or the worker process. What is still in flight is
    /// sent again at the next start: at least once.
    func stopWebhooks() {
        guard let (dispatcher, client) = lockedWebhooks() else { return }
        dispatcher.stop()
        if !dispatcher.waitForIdle(timeout: .now() + .seconds(2)) {
            logger.notice("webhook attempts still in flight at stop; they are sent again at the next start")
        }
        client.shutdown()
    }
}
