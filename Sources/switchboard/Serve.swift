import ArgumentParser
import Dispatch
import Foundation
import Logging
import ServiceLifecycle
import SwitchboardCore
import SwitchboardServer

/// `switchboard serve`: run the daemon until SIGTERM or SIGINT; SIGHUP reloads the log level and
/// the SFU seed file.
struct Serve: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Run the signaling daemon (accepts the PeerJS server's flags).")

    @OptionGroup var options: ConfigOptions

    func run() async throws {
        let configuration = try options.load()
        let control = LogLevelControl(configuration.logLevel)
        LoggingSystem.bootstrap { label in DynamicLevelLogHandler(label: label, control: control) }
        let logger = Logger(label: "switchboard")
        let daemon = SwitchboardDaemon(configuration: configuration, logger: logger, logLevel: control)
        let reload = reloadOnHangup(daemon: daemon, logger: logger)
        defer { reload.cancel() }
        let group = ServiceGroup(configuration: .init(
            services: [.init(service: daemon, successTerminationBehavior: .gracefullyShutdownGroup)],
            gracefulShutdownSignals: [.sigterm, .sigint],
            logger: logger))
        do {
            try await group.run()
        } catch {
            logger.critical("switchboard stopped with an error", metadata: ["error": "\(error)"])
            // EX_CONFIG, as `check-config` exits: a setting the start found wrong (a state file,
            // a mode the other daemons of its database do not run).
            if let error = error as? SwitchboardError, error.code == .invalidConfiguration { throw ExitCode(78) }
            throw ExitCode(1)
        }
        // EX_TEMPFAIL: another daemon took the lead of the database while this one was frozen or
        // cut off; restarted (systemd's Restart=on-failure), it stands by.
        if daemon.deposed { throw ExitCode(75) }
        // EX_SOFTWARE: a service thread was stuck and had to be left behind.
        if !daemon.stuckThreads.isEmpty { throw ExitCode(70) }
    }

    /// SIGHUP re-reads the configuration and applies its log level and SFU seed file.
    private func reloadOnHangup(daemon: SwitchboardDaemon, logger: Logger) -> any DispatchSourceSignal {
        signal(SIGHUP, SIG_IGN)
        let source = DispatchSource.makeSignalSource(signal: SIGHUP, queue: .global())
        let options = self.options
        source.setEventHandler {
            do {
                let reloaded = try options.loadQuietly()
                try daemon.reload(reloaded)
                logger.notice("configuration reloaded", metadata: ["log.level": "\(reloaded.logLevel)"])
            } catch {
                logger.error("SIGHUP reload failed; keeping the running configuration", metadata: ["error": "\(error)"])
            }
        }
        source.resume()
        return source
    }
}
