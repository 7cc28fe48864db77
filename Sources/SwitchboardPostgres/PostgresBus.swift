import Foundation
import Logging
import NIOCore
import NIOPosix
import PostgresNIO
import SwitchboardCore
import Synchronization

/// Messages between the daemons of one database over PostgreSQL's `LISTEN`/`NOTIFY` (ADR 0012,
/// plan step 2): no broker of its own, only the database every node already uses.
///
/// Each node listens on a channel of its own (``channel(of:)``). A message travels as JSON in the
/// notification's payload; one whose JSON is over ``inlineLimit`` bytes (`NOTIFY` takes under
/// 8,000) is written to a `node_message` row in the same transaction as its notification, which
/// then carries only the row's id: the receiver takes the row (`DELETE … RETURNING`), so the body
/// is read once and the table stays empty. Notifications are delivered on commit, in order per
/// sender, and only to nodes listening then: a message to a node that is away is lost, so a
/// sender that needs an answer retries, and ``run(listening:deliver:)`` hands each message id
/// over once (duplicates from retries are dropped).
///
/// Each bus has its own two connections: one that listens (a listening connection must not be
/// busy with other statements) and one that sends.
public final class PostgresBus: NodeBus {
    /// One message (``NodeMessage``).
    public typealias Message = NodeMessage

    /// The largest payload sent inline, in bytes (PostgreSQL's limit is 8,000).
    public static let inlineLimit = 7_900
    /// How many recent message ids are remembered to drop duplicates.
    static let remembered = 4_096

    public let node: String
    private let configuration: PostgresConnection.Configuration
    private let logger: Logger
    private let sender = Mutex<PostgresConnection?>(nil)
    private let seen = Mutex(SeenIDs())

    /// The channel node `node` listens on.
    public static func channel(of node: String) -> String { "sb_node_\(node)" }

    public init(configuration: PostgresStore.Configuration, node: String, logger: Logger = Logger(label: "switchboard.bus")) throws(SwitchboardError) {
        self.configuration = try configuration.connection()
        self.node = node
        self.logger = logger
    }

    /// Listens until the task is cancelled, calling `listening` each time the `LISTEN` is in place
    /// (again after a lost connection, which is replaced within a second), `lost` when a
    /// listening connection was lost (notifications sent until the next `listening` are lost),
    /// and `deliver` once per message id, in order of arrival.
    public func run(
        listening: @Sendable () async -> Void = {}, lost: @Sendable () async -> Void = {}, deliver: @Sendable (Message) async -> Void
    ) async {
        while !Task.isCancelled {
            do {
                let connection = try await PostgresConnection.connect(
                    on: MultiThreadedEventLoopGroup.singleton.next(), configuration: configuration, id: 1, logger: logger)
                do {
                    try await connection.listen(on: Self.channel(of: node)) { notifications in
                        await listening()
                        for try await notification in notifications {
                            guard let message = await receive(notification.payload, on: connection) else { continue }
                            if seen.withLock({ $0.insert("\(message.from)/\(message.id)") }) { await deliver(message) }
                        }
                    }
                } catch {
                    if !Task.isCancelled {
                        logger.warning("bus: listening connection lost; listening again", metadata: ["error": "\(PostgresSession.storeError(error))"])
                        await lost()
                    }
                }
                try? await connection.close()
            } catch {
                logger.warning("bus: cannot connect to listen; trying again", metadata: ["error": "\(PostgresSession.storeError(error))"])
            }
            try? await Task.sleep(for: .seconds(1))
        }
    }

    /// Sends `message` to node `to`: inline, or by reference when its JSON is over ``inlineLimit``.
    /// Throws `unavailable` when the database cannot take it (the caller may retry: duplicates are
    /// dropped by id).
    public func send(_ message: Message, to node: String) async throws {
        let json = String(decoding: message.json(), as: UTF8.self)
        let channel = Self.channel(of: node)
        var used: PostgresConnection?
        do {
            let connection = try await senderConnection()
            used = connection
            if json.utf8.count <= Self.inlineLimit {
                // Rows read to the end, so that a statement's error is this call's.
                for try await _ in try await connection.query("SELECT pg_notify(\(channel), \(json))", logger: logger) {}
            } else {
                let id = message.id + "@" + self.node
                let reference = "{\"ref\":\(Self.quoted(id))}"
                // One statement, so one round trip and one transaction: the notification is
                // delivered on its commit, when the row is there to read.
                for try await _ in try await connection.query(
                    """
                    WITH stored AS (
                      INSERT INTO node_message (id, body) VALUES (\(id), \(json))
                      ON CONFLICT (id) DO UPDATE SET body = EXCLUDED.body RETURNING id)
                    SELECT pg_notify(\(channel), \(reference)) FROM stored
                    """, logger: logger) {}
            }
        } catch {
            // Replaced at the next send; closed first (postgres-nio asserts a connection is
            // closed before it goes). Only the connection this send used: another send may
            // have put a new one in place meanwhile.
            if let used {
                sender.withLock { current in
                    if current === used { current = nil }
                }
                try? await used.close()
            }
            throw PostgresSession.storeError(error)
        }
    }

    /// Closes the sending connection (the listening one ends with ``run``'s task).
    public func close() async {
        let connection = sender.withLock { $0.take() }
        try? await connection?.close()
    }

    /// The sending connection, connected when there is none open. Sends run concurrently (one
    /// task per destination): when two connect at once, the first in place is kept and the
    /// other closed (postgres-nio asserts a connection is closed before it goes).
    private func senderConnection() async throws -> PostgresConnection {
        if let connection = sender.withLock({ $0 }), !connection.isClosed { return connection }
        let fresh = try await PostgresConnection.connect(
            on: MultiThreadedEventLoopGroup.singleton.next(), configuration: configuration, id: 2, logger: logger)
        let (use, spare) = sender.withLock { current -> (PostgresConnection, PostgresConnection?) in
            if let existing = current, !existing.isClosed { return (existing, fresh) }
            // A connection found closed is let go: it is closed already.
            current = fresh
            return (fresh, nil)
        }
        if let spare { try? await spare.close() }
        return use
    }

    /// The message a payload carries, reading (and removing) its row when it came by reference;
    /// `nil` for a payload that is neither (logged) or a row already taken.
    private func receive(_ payload: String, on connection: PostgresConnection) async -> Message? {
        let decoder = JSONDecoder()
        if let message = Message.read(Array(payload.utf8)) { return message }
        guard let reference = try? decoder.decode([String: String].self, from: Data(payload.utf8))["ref"] else {
            logger.warning("bus: a notification that is no message", metadata: ["bytes": "\(payload.utf8.count)"])
            return nil
        }
        do {
            let rows = try await connection.query("DELETE FROM node_message WHERE id = \(reference) RETURNING body", logger: logger)
            for try await body in rows.decode(String.self) {
                guard let message = Message.read(Array(body.utf8)) else { throw SwitchboardError(.invalidRequest, "a stored bus message that is no message") }
                return message
            }
        } catch {
            logger.warning("bus: a message by reference could not be read", metadata: ["error": "\(error)"])
        }
        return nil
    }

    private static func quoted(_ text: String) -> String {
        String(decoding: (try? JSONEncoder().encode(text)) ?? Data("\"\"".utf8), as: UTF8.self)
    }

    /// The ids of the last ``remembered`` messages delivered.
    struct SeenIDs {
        private var ids = Set<String>()
        private var order: [String] = []
        private var next = 0

        /// Whether `id` is new (and remembers it).
        mutating func insert(_ id: String) -> Bool {
            guard !ids.contains(id) else { return false }
            if order.count < PostgresBus.remembered {
                order.append(id)
            } else {
                ids.remove(order[next])
                order[next] = id
                next = (next + 1) % PostgresBus.remembered
            }
            ids.insert(id)
            return true
        }
    }
}
