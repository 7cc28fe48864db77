import ArgumentParser
import Logging
import SwitchboardWebhooks

/// `switchboard webhook-worker`: the webhook delivery worker process the daemon starts itself
/// (`webhooks.worker_process`, ADR 0011), never run by hand. It reads attempts from a Unix socket
/// on its standard input and answers on its standard output; it logs to standard error.
struct WebhookWorker: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "webhook-worker", abstract: "The webhook delivery worker the daemon starts (internal).", shouldDisplay: false)

    @Option(help: "Connections per endpoint host (the daemon passes webhooks.max_in_flight).")
    var connectionsPerHost: Int = 16

    @Flag(inversion: .prefixedNo, help: "Run every thread under SCHED_IDLE (the daemon always does; tests of the mechanics may not).")
    var idle = true

    func run() async throws {
        LoggingSystem.bootstrap { label in
            var handler = StreamLogHandler.standardError(label: label)
            handler.logLevel = .notice
            return handler
        }
        let status = await WebhookWorkerProcess.run(
            connectionsPerHost: max(1, connectionsPerHost), idle: idle, logger: Logger(label: "switchboard.webhook-worker"))
        if status != 0 { throw ExitCode(status) }
    }
}
