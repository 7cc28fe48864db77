import ArgumentParser
import SwitchboardServer

/// `switchboard`: the WebRTC signaling daemon.
@main
struct SwitchboardCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "switchboard",
        abstract: "A self-hosted WebRTC signaling server, wire-compatible with the PeerJS server.",
        version: SwitchboardVersion.current,
        subcommands: [Serve.self, CheckConfig.self, Migrate.self, Token.self, WebhookSecret.self, WebhookWorker.self, Version.self],
        defaultSubcommand: Serve.self
    )
}
