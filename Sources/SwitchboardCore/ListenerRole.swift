/// Which listener a connection arrived on.
public enum ListenerRole: String, Sendable, Equatable, CaseIterable {
    /// The client port: PeerJS (and later call-protocol) WebSockets and the PeerJS HTTP routes.
    case client
    /// The admin port: the HTTP JSON admin API.
    case admin
}
