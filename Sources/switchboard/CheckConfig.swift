import ArgumentParser
import SwitchboardServer

/// `switchboard check-config`: validate the configuration and exit.
struct CheckConfig: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "check-config",
        abstract: "Load and validate the configuration (file, environment, flags); exit 78 naming the bad key.")

    @OptionGroup var options: ConfigOptions

    func run() throws {
        let configuration = try options.load()
        let listeners = configuration.transport.listeners.map { "\($0.role.rawValue) \($0.host):\($0.port)\($0.usesTLS ? " (TLS)" : "")" }
        print("configuration OK: \(listeners.joined(separator: ", ")); PeerJS at \(configuration.peerJSRoutes.webSocketPath); store \(configuration.storeDescription)")
    }
}
