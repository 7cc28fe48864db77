import ArgumentParser
import SwitchboardServer

/// `switchboard check-config`: validate the configuration and exit.
struct CheckConfig: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "check-config",
        abstract: "Load and validate the configuration (file, environment, flags); exit non-zero naming the bad key.")

    @OptionGroup var options: ConfigOptions

    func run() throws {
        let configuration = try options.load()
        print("configuration OK: listening on \(configuration.transport.host):\(configuration.transport.port), PeerJS at \(configuration.peerJSRoutes.webSocketPath)")
    }
}
