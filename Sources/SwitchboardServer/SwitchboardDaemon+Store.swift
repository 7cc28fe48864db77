import Foundation
import Logging
import Metrics
import SwitchboardCore
import SwitchboardPostgres
import SwitchboardStore
import SwitchboardTransport

/// Every port the daemon's store serves: the SQLite store and the PostgreSQL store both do.
public typealias DaemonStore = CallStore & WebhookStore & SFUStore & AuditLog & StoreHealth & LiveRoomReading

extension SwitchboardConfiguration {
    /// Where the store is, for logs and `check-config` (never a password).
    public var storeDescription: String {
        if let postgres { return "postgres://\(postgres.username)@\(postgres.host):\(postgres.port)/\(postgres.database)" }
        return store.databasePath
    }
}

extension SwitchboardDaemon {
    /// Opens the store `store.kind` names, migrated.
    func openStore(factory: any MetricsFactory) throws -> any DaemonStore {
        if let postgres = configuration.postgres {
            let store: PostgresStore
            do {
                store = try PostgresStore(configuration: postgres, logger: logger)
            } catch let error as SwitchboardError {
                // Name the key and where it points (never the password): the operator's next step.
                throw SwitchboardError(error.code, "store.postgres_url (\(configuration.storeDescription)): \(error.message)")
            }
            // Whether the connection is encrypted, as the server sees it (sslmode prefer
            // falls back to plain text when the server offers no TLS).
            let encrypted = (try? store.usesTLS()).map { $0 ? "yes" : "no" } ?? "unknown"
            logger.notice("connected to PostgreSQL", metadata: ["store": "\(configuration.storeDescription)", "tls": "\(encrypted)"])
            if !store.migrationsApplied.isEmpty {
                logger.notice("PostgreSQL database migrated", metadata: ["migrations": "\(store.migrationsApplied)"])
            }
            let calls = configuration.postgresSpreadsCalls ? "spread" : "leader"
            do {
                // One mode per database: a daemon refuses to join live nodes that run another.
                let others = try store.nodesRunningCalls(otherThan: calls, except: nodeID)
                if !others.isEmpty {
                    throw SwitchboardError(
                        .invalidConfiguration,
                        "store.postgres_calls is \(calls), but live nodes of this database run calls otherwise (\(others.sorted { $0.key < $1.key }.map { "\($0.key): \($0.value)" }.joined(separator: ", "))); every daemon of one database must run the same mode")
                }
            } catch {
                store.close()
                throw error
            }
            let lease = StoreLease(
                store: store, node: nodeID, lease: configuration.postgresLease, now: clocks.wall, calls: calls, factory: factory, logger: logger)
            lease.onDeposed { [weak self] in self?.wasDeposed() }
            lease.countSockets { [weak self] in self?.transport.webSocketCount ?? 0 }
            storeLease = lease
            do {
                let tunnel = try startRelaying(store, factory: factory)
                do {
                    try lease.start(
                        description: nodeDescription, cancelled: { [weak self] in self?.standbyCancelled ?? true },
                        follow: { leader, lapsed, renewed in
                            // The turn's start, moved onto the tunnel's clock by its age.
                            let age: Duration = ContinuousClock.now - renewed
                            let began = tunnel.map { $0.clock.now().advanced(by: .zero - age) }
                            tunnel?.follow(leader.map { TunnelFront.Leader(node: $0.node, generation: $0.generation) }, lapsed: lapsed, renewedAt: began)
                        })
                } catch {
                    stopRelaying()
                    throw error
                }
                tunnel?.becameLeader()
            } catch {
                storeLease = nil
                store.close()
                throw error
            }
            return store
        }
        let store = try SQLiteStore(configuration: configuration.store)
        // While the store is idle (no load), give the heap memory ended calls left back.
        store.whenIdle { ProcessMemory.releaseFree() }
        StoreFoldMetrics.observe(store, factory: factory, logger: logger)
        return store
    }

    /// Where the store is, for the start-up log (never a password).
    var storeDescription: String { configuration.storeDescription }

    /// At stop: SQLite folds its batch log (tables whole for tools that read the file; the next
    /// start would fold it too); PostgreSQL closes its connection.
    func closeStore() {
        switch store {
        case let sqlite as SQLiteStore:
            do { try sqlite.fold() } catch {
                logger.error("folding the batch log at stop failed; the next start folds it", metadata: ["error": "\(error)"])
            }
        case let postgres as PostgresStore:
            storeLease?.stop()
            storeLease = nil
            postgres.close()
        default:
            break
        }
    }
}
