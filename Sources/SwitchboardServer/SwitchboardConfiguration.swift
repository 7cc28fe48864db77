import Logging
import SwitchboardAdmin
import SwitchboardAuth
import SwitchboardCore
import SwitchboardPostgres
import SwitchboardStore
import SwitchboardTransport

/// Every setting of the daemon, validated, split into each component's own configuration.
public struct SwitchboardConfiguration: Sendable {
    /// The libwebsockets listener.
    public var transport: TransportConfiguration
    /// The PeerJS relay.
    public var relay: RelayConfiguration
    /// The admin API (its listener is in ``transport``).
    public var admin: AdminConfiguration
    /// The SQLite store (and the state directory, whatever the store's kind).
    public var store: StoreConfiguration
    /// The PostgreSQL store's database when `store.kind` is `postgres`; `nil` for SQLite.
    public var postgres: PostgresStore.Configuration?
    /// How long the daemon's hold on its PostgreSQL database lasts unrenewed.
    public var postgresLease: Duration
    /// Whether a daemon that does not lead relays its clients to the leader (`store.postgres_standby`
    /// relay) or binds nothing until it leads (idle).
    public var postgresRelays: Bool
    /// Whether every daemon runs calls (`store.postgres_calls` spread) or the leader runs them all.
    public var postgresSpreadsCalls: Bool
    /// SFU placement.
    public var placement: PlacementConfiguration
    /// Signed user tokens.
    public var auth: AuthConfiguration
    /// Caps on open sockets and connect rates.
    public var limits: ConnectionLimits
    /// The call protocol and call types.
    public var calls: CallConfiguration
    /// Webhook endpoints and delivery (their routing is also in ``calls``).
    public var webhooks: WebhookSettings
    /// The test-only echo path (`testing.echo_path`); `nil` when off.
    public var echoPath: String?
    /// Where call-protocol sockets connect; `nil` when it is off.
    public var connectPath: String?
    /// PeerJS mount path and CORS.
    public var peerJSRoutes: PeerJSRoutes
    /// Static files and the development token route on the client listener.
    public var http: HTTPConfiguration
    /// How long shutdown waits for sockets to close.
    public var drainTimeout: Duration
    /// The log level.
    public var logLevel: Logger.Level

    /// The defaults of every key.
    public static var defaults: SwitchboardConfiguration {
        get throws { try ConfigurationLoader.load(fileContents: nil, environment: [:]) }
    }
}
