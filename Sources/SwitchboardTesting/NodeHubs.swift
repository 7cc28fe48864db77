import CoreMetrics
import Dispatch
import Foundation
import Logging
import SwitchboardApp
import SwitchboardCore

/// The hubs of several nodes on one store (ADR 0012): the in-memory twins of the store and of
/// `call_owner`, and one wall clock moved by hand (tokens last a day), which also times the
/// nodes' lapses.
public final class NodeHubs: @unchecked Sendable {
    public let base = InMemoryCallStore()
    public let clock = ManualWallClock()
    public let table: InMemoryCallOwnership.Table
    public let logger = Logger(label: "test", factory: { _ in SwiftLogNoOpLogHandler() })
    private var serial = 0

    /// Each hub's call settings (a test shortens the resume window), and its metrics.
    public var configuration = CallConfiguration()
    public var metricsFactory: any MetricsFactory = NOOPMetricsHandler.instance

    public init() {
        table = InMemoryCallOwnership.Table(calls: base, clock: { [clock] in clock.now() })
    }

    /// A hub of node `id` running the calls it claims (not started), its transport and its claims.
    public func hub(
        _ id: String, wait: Duration = .zero, claimingAtStart: Bool = true, placement: FixedPlacement = FixedPlacement()
    ) -> (hub: CallHub, transport: InMemoryTransport, ownership: InMemoryCallOwnership) {
        let ownership = InMemoryCallOwnership(node: id, table: table)
        let hub = CallHub(
            queue: DispatchQueue(label: "test.calls.\(id)"), configuration: configuration, store: OwnedCallStore(base: base, ownership: ownership),
            placement: placement, tokenVerifier: UserIDTokenVerifier(), wallClock: { [clock] in CallHub.roundedToMilliseconds(clock.now()) },
            newID: { UUID().uuidString.lowercased() }, metricsFactory: metricsFactory, logger: logger)
        hub.ownCalls(through: ownership, wait: wait, claimingAtStart: claimingAtStart)
        return (hub, InMemoryTransport(), ownership)
    }

    /// Opens an authenticated socket of `user` on `hub` (its answers drained from `transport`).
    public func connect(_ hub: CallHub, _ transport: InMemoryTransport, _ user: String) -> ConnectionID {
        serial += 1
        let socket = ConnectionID(thread: 0, serial: UInt64(serial))
        hub.connectForTesting(socket, user: user, transport: transport)
        _ = transport.drain()
        return socket
    }
}

extension CallHub {
    /// Opens `socket` on `/v1/connect` with `user` as its token (a ``UserIDTokenVerifier`` hub)
    /// and returns once the hub answered it on `transport`.
    public func connectForTesting(_ socket: ConnectionID, user: String, transport: InMemoryTransport) {
        let before = transport.commands.count
        queue.sync { receive([.opened(socket, WebSocketUpgrade(path: "/v1/connect", query: ["token": user]))]) }
        _ = transport.waitForCommands(count: before + 1)
    }
}
