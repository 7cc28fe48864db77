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

    init(
        configuration: PostgresConnection.Configuration, statementTimeout: Duration, group: any EventLoopGroup = PostgresSession.group,
        logger: Logger
    ) {
        self.configuration = configuration
        self.statementTimeout = statementTimeout
        self.group = group
        self.logger = logger
    }

    /// How long a statement may wait for the server's answer.
    let statementTimeout: Duration

    /// The event loop the stores' connections run on: one of their own. A caller on another
    /// event loop (the shared one's, say the webhook client's) blocks that loop while its call
    /// runs elsewhere; were the connection on the loop it blocked, the statement could never be
    /// answered and the caller would wait forever.
    static let group: any EventLoopGroup = MultiThreadedEventLoopGroup(numberOfThreads: 1)

    /// A statement's answer, set on the connection's event loop and read by the waiting caller
    /// once `done` is signalled.
    final class Answer<T>: @unchecked Sendable {
        private var result: Result<T, any Error>?
        let done = DispatchSemaphore(value: 0)

        func set(_ result: Result<T, any Error>) {
            self.result = result
            done.signal()
        }

        func get() throws -> T { try result!.get() }
    }

    /// Runs `body` with the connection, connecting first when there is none. Called on an
    /// event loop's thread (where blocking on a future would stop that loop, and NIO refuses
    /// it), the work runs on a thread of its own while the caller waits.
    func withConnection<T>(_ body: (Connection) throws -> T) throws -> T {
        guard MultiThreadedEventLoopGroup.currentEventLoop != nil else { return try locked(body) }
        return try withoutActuallyEscaping(body) { body in
            let call = OffLoop<T> { [self] in try locked(body) }
            DispatchQueue.global().async { call.run() }
            call.done.wait()
            return try call.value!.get()
        }
    }

    private func locked<T>(_ body: (Connection) throws -> T) throws -> T {
        try lock.withLock {
            let connection = try connected()
            do {
                defer { if connection.isClosed { self.connection = nil } }
                return try body(Connection(base: connection, statementTimeout: statementTimeout, logger: logger))
            } catch let rolledBack as RolledBack {
                // The server rolled a statement's transaction back; the connection is fine.
                throw rolledBack.error
            } catch let error as SwitchboardError where error.code == .unavailable {
                // The connection is lost or unusable (the server ended it, or stopped answering):
                // closed here, so the next call connects anew rather than trying it again.
                _ = try? connection.close().wait()
                if self.connection === connection { self.connection = nil }
                throw error
            }
        }
    }

    /// One call moved off an event loop: the caller waits on `done` while another thread runs
    /// `work` and fills `value`, so the two never touch them at once. The work is dropped before
    /// `done` is signalled: it must not outlive the caller's frame.
    private final class OffLoop<T>: @unchecked Sendable {
        private var work: (() throws -> T)?
        var value: Result<T, any Error>?
        let done = DispatchSemaphore(value: 0)

        init(_ work: @escaping () throws -> T) { self.work = work }

        func run() {
            value = Result { try work!() }
            work = nil
            done.signal()
        }
    }

    /// Runs `body` in one transaction: committed when it returns, rolled back when it throws.
    /// A transaction the server rolled back to break a deadlock, or for a serialization
    /// failure, is run again from the start, up to ``rollbackRetries`` times (as PostgreSQL's
    /// manual advises); `body` must therefore act only on the database.
    func transaction<T>(_ body: (Connection) throws -> T) throws -> T {
        try withConnection { connection in
            var attempt = 0
            while true {
                try connection.execute("BEGIN")
                do {
                    let result = try body(connection)
                    try connection.execute("COMMIT")
                    return result
                } catch let rolledBack as RolledBack where attempt < Self.rollbackRetries {
                    _ = try? connection.execute("ROLLBACK")
                    attempt += 1
                    logger.notice(
                        "PostgreSQL rolled a transaction back; running it again",
                        metadata: ["sqlstate": "\(rolledBack.state)", "attempt": "\(attempt + 1)"])
                } catch {
                    _ = try? connection.execute("ROLLBACK")
                    throw error
                }
            }
        }
    }

    /// How many times a transaction the server rolled back runs again before its caller gets
    /// `unavailable`.
    static let rollbackRetries = 3

    /// SQLSTATEs of a transaction the server rolled back that may succeed run again:
    /// `deadlock_detected` and `serialization_failure`.
    static let retriedStates: Set<String> = ["40P01", "40001"]

    /// A statement failed because the server rolled its transaction back (``retriedStates``):
    /// ``transaction(_:)`` runs it again; anywhere else it is `error`.
    struct RolledBack: Error {
        let state: String
        let error: SwitchboardError
    }

    /// Whoever holds the session last (the store, or a call ownership made from it) closes it.
    deinit { close() }

    /// Closes the connection; a later call opens another. Waits for the close, but not on an
    /// event loop's thread (the store's last reference may go there), where it only starts it.
    func close() {
        lock.withLock {
            if let connection {
                let closing: EventLoopFuture<Void> = connection.close()
                if MultiThreadedEventLoopGroup.currentEventLoop == nil {
                    _ = try? closing.wait()
                } else {
                    // Held until closed: postgres-nio asserts a connection is closed before it
                    // goes (a TLS close takes a round trip, so it may outlive this call).
                    closing.whenComplete { _ in withExtendedLifetime(connection) {} }
                }
            }
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
        if let error = error as? RolledBack { return error.error }
        if let error = error as? PSQLError {
            if let info = error.serverInfo {
                let state = info[.sqlState] ?? "?"
                // The server going away or refusing connections for now: retry later.
                if Self.unavailableStates.contains(where: { state.hasPrefix($0) }) {
                    return SwitchboardError(.unavailable, "PostgreSQL is unavailable: \(info[.message] ?? "") (SQLSTATE \(state))")
                }
                return SwitchboardError(.internalError, "PostgreSQL refused a statement: \(info[.message] ?? "") (SQLSTATE \(state))")
            }
            return SwitchboardError(.unavailable, "PostgreSQL is unavailable (\(error.code))")
        }
        return SwitchboardError(.unavailable, "PostgreSQL is unavailable (\(error))")
    }

    /// SQLSTATEs (and classes) that mean the server is away or busy rather than that it refused
    /// the statement: connection exceptions (08), insufficient resources (53), operator
    /// intervention such as a shutdown or a restart (57P), and a standby's read-only refusal.
    static let unavailableStates = ["08", "53", "57P", "25006"]

    /// The connection as the store uses it: statements that block until answered.
    struct Connection {
        let base: PostgresConnection
        let statementTimeout: Duration
        let logger: Logger

        /// Runs one statement (the extended protocol: one statement per call) and returns its rows.
        /// A server that does not answer within `statementTimeout` (stopped, or
        /// its network gone silent) fails the statement with `unavailable` and its connection is
        /// closed, so the next call connects again instead of waiting on it.
        @discardableResult
        func query(_ sql: String, _ binds: PostgresBindings = PostgresBindings()) throws -> [PostgresRow] {
            let answer = Answer<PostgresQueryResult>()
            base.query(PostgresQuery(unsafeSQL: sql, binds: binds), logger: logger).whenComplete { answer.set($0) }
            guard answer.done.wait(timeout: .now() + .milliseconds(Int(statementTimeout.milliseconds))) == .success else {
                let closing: EventLoopFuture<Void> = base.close()
                _ = closing
                throw SwitchboardError(.unavailable, "PostgreSQL did not answer within \(statementTimeout)")
            }
            do {
                return Array(try answer.get().rows)
            } catch let error as PSQLError {
                if let state = error.serverInfo?[.sqlState], PostgresSession.retriedStates.contains(state) {
                    let message = error.serverInfo?[.message] ?? ""
                    throw RolledBack(
                        state: state, error: SwitchboardError(.unavailable, "PostgreSQL rolled the transaction back: \(message) (SQLSTATE \(state))"))
                }
                throw PostgresSession.storeError(error)
            } catch {
                throw PostgresSession.storeError(error)
            }
        }

        func execute(_ sql: String, _ binds: PostgresBindings = PostgresBindings()) throws {
            try query(sql, binds)
        }
    }
}
