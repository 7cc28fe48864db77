import ArgumentParser
import Logging
import ServiceLifecycle
import SwitchboardServer

/// `switchboard serve`: run the daemon until SIGTERM or SIGINT.
struct Serve: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Run the signaling daemon (accepts the PeerJS server's flags).")

    @OptionGroup var options: ConfigOptions

    func run() async throws {
        let configuration = try options.load()
        let level = configuration.logLevel
        LoggingSystem.bootstrap { label in
            var handler = StreamLogHandler.standardOutput(label: label)
            handler.logLevel = level
            return handler
        }
        let logger = Logger(label: "switchboard")
        let daemon = SwitchboardDaemon(configuration: configuration, logger: logger)
        let group = ServiceGroup(configuration: .init(
            services: [.init(service: daemon, successTerminationBehavior: .gracefullyShutdownGroup)],
            gracefulShutdownSignals: [.sigterm, .sigint],
            logger: logger))
        try await group.run()
    }
}
