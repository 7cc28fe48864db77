import Foundation
import Logging
import NIOCore
import NIOPosix
import PostgresNIO
import SwitchboardCore

/// One connection to PostgreSQL, used synchronously: the store's callers run on dispatch queues
/// (never an event loop), and each call blocks its thread until the server answered, as the
/// SQLite store's calls do. Calls are serialized by a lock. A connection that closed (the server
/// restarted, the network went) is replaced at the next call; until one can be made every call
/// fails with `unavailable`.
final class PostgresSession: @unchecked Sendable {
    let configuration: PostgresConnection.Configuration
    let logger: Logger
    private let group: any EventLoopGroup
    // Guarded by `lock`.
    private let lock = NSLock()
    private var connection: PostgresConnection?
    private var connections = 0

    init(configuration: PostgresConnection.Configuration, group: any EventLoopGroup = MultiThreadedEventLoopGroup.singleton, logger: Logger) {
        self.configuration = configuration
        self.group = group
        self.logger = logger
    }

    /// Runs `body` with the connection, connecting first when there is none.
    func withConnection<T>(_ body: (Connection) throws -> T) throws -> T {
        try lock.withLock {
            let connection = try connected()
            defer { if connection.isClosed { self.connection = nil } }
            return try body(Connection(base: connection, logger: logger))
        }
    }

    /// Runs `body` in one transaction: committed when it returns, rolled back when it throws.
    func transaction<T>(_ body: (Connection) throws -> T) throws -> T {
        try withConnection { connection in
            try connection.execute("BEGIN")
            do {
                let result = try body(connection)
                try connection.execute("COMMIT")
                return result
            } catch {
                _ = try? connection.execute("ROLLBACK")
                throw error
            }
        }
    }

    /// Closes the connection; a later call opens another.
    func close() {
        lock.withLock {
            if let connection { _ = try? connection.close().wait() }
            connection = nil
        }
    }

    private func connected() throws -> PostgresConnection {
        if let connection, !connection.isClosed { return connection }
        connection = nil
        connections += 1
        do {
            let made = try PostgresConnection.connect(on: group.next(), configuration: configuration, id: connections, logger: logger).wait()
            connection = made
            return made
        } catch {
            throw Self.storeError(error)
        }
    }

    /// A thrown error as the store's callers expect it: a server's refusal of a statement is an
    /// internal error naming its SQLSTATE; anything else (no server, a lost connection) is
    /// `unavailable`, which callers may retry.
    static func storeError(_ error: any Error) -> SwitchboardError {
        if let error = error as? SwitchboardError { return error }
        if let error = error as? PSQLError {
            if let info = error.serverInfo {
                let state = info[.sqlState] ?? "?"
                return SwitchboardError(.internalError, "PostgreSQL refused a statement: \(info[.message] ?? "") (SQLSTATE \(state))")
            }
            return SwitchboardError(.unavailable, "PostgreSQL is unavailable (\(error.code))")
        }
        return SwitchboardError(.unavailable, "PostgreSQL is unavailable (\(error))")
    }

    /// The connection as the store uses it: statements that block until answered.
    struct Connection {
        let base: PostgresConnection
        let logger: Logger

        /// Runs one statement (the extended protocol: one statement per call) and returns its rows.
        @discardableResult
        func query(_ sql: String, _ binds: PostgresBindings = PostgresBindings()) throws -> [PostgresRow] {
            do {
                let result = try base.query(PostgresQuery(unsafeSQL: sql, binds: binds), logger: logger).wait()
                return Array(result.rows)
            } catch {
                throw PostgresSession.storeError(error)
            }
        }

        func execute(_ sql: String, _ binds: PostgresBindings = PostgresBindings()) throws {
            try query(sql, binds)
        }
    }
}
