import SwitchboardApp
import SwitchboardCore
import SwitchboardTesting

extension CallHub {
    /// Opens `socket` on `/v1/connect` with `user` as its token (a ``UserIDTokenVerifier`` hub)
    /// and returns once the hub answered it on `transport`.
    func connectForTesting(_ socket: ConnectionID, user: String, transport: InMemoryTransport) {
        let before = transport.commands.count
        queue.sync { receive([.opened(socket, WebSocketUpgrade(path: "/v1/connect", query: ["token": user]))]) }
        _ = transport.waitForCommands(count: before + 1)
    }
}
