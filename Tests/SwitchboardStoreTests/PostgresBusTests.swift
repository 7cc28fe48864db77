import Foundation
import PostgresNIO
import SwitchboardCore
import SwitchboardPostgres
import Synchronization
import XCTest

/// Messages between nodes over LISTEN/NOTIFY, against the test server: inline and by reference,
/// each id handed over once, only to the node addressed, and a listening connection the server
/// ended replaced.
final class PostgresBusTests: XCTestCase {
    /// What a running bus received, and a wait for it.
    private final class Inbox: Sendable {
        let messages = Mutex<[PostgresBus.Message]>([])
        let listens = Mutex(0)

        func wait(for count: Int, _ condition: @escaping @Sendable () -> Int, timeout: Duration = .seconds(10)) async throws {
            let deadline = ContinuousClock.now + timeout
            while condition() < count {
                guard ContinuousClock.now < deadline else { throw Failure("timed out waiting for \(count)") }
                try await Task.sleep(for: .milliseconds(5))
            }
        }

        func received(_ count: Int) async throws { try await wait(for: count) { [self] in messages.withLock { $0.count } } }
        func listening(_ count: Int) async throws { try await wait(for: count) { [self] in listens.withLock { $0 } } }
    }

    struct Failure: Error, CustomStringConvertible {
        let description: String
        init(_ description: String) { self.description = description }
    }

    private func start(_ bus: PostgresBus) async throws -> (Inbox, Task<Void, Never>) {
        let inbox = Inbox()
        let task = Task {
            await bus.run(listening: { inbox.listens.withLock { $0 += 1 } }, deliver: { message in inbox.messages.withLock { $0.append(message) } })
        }
        try await inbox.listening(1)
        return (inbox, task)
    }

    /// A new database with the store's migrations (the bus's table among them).
    private func migratedDatabase() throws -> PostgresStore.Configuration {
        let database = try PostgresTestServer.running().database()
        try PostgresStore(configuration: database).close()
        return database
    }

    private func message(_ id: String, from: String = "a", body: String = #"{"type":"OFFER"}"#) -> PostgresBus.Message {
        PostgresBus.Message(id: id, from: from, kind: "relay", body: body)
    }

    func test_messagesArriveInlineAndByReferenceOnceEachAndOnlyWhereSent() async throws {
        let database = try migratedDatabase()
        let a = try PostgresBus(configuration: database, node: "a")
        let b = try PostgresBus(configuration: database, node: "b")
        let c = try PostgresBus(configuration: database, node: "c")
        let (toB, runB) = try await start(b)
        let (toC, runC) = try await start(c)
        defer { runB.cancel(); runC.cancel() }

        let large = String(repeating: "x", count: 20_000)
        try await a.send(message("1"), to: "b")
        try await a.send(message("2", body: large), to: "b")
        try await a.send(message("1"), to: "b")  // a retry: dropped
        try await a.send(message("1", from: "z"), to: "b")  // the same id from another node: kept
        try await a.send(message("3"), to: "c")
        try await toB.received(3)
        try await toC.received(1)
        try await a.send(message("4"), to: "b")
        try await toB.received(4)
        XCTAssertEqual(toB.messages.withLock { $0.map { "\($0.from)/\($0.id)" } }, ["a/1", "a/2", "z/1", "a/4"], "in order, the retry dropped")
        XCTAssertEqual(toB.messages.withLock { $0[1].body }, large, "20,000 bytes by reference")
        XCTAssertEqual(toC.messages.withLock { $0.map(\.id) }, ["3"])

        let connection = try PostgresTestServer.running().connect(database: database.database)
        defer { try? connection.close().wait() }
        let left = try connection.query("SELECT count(*) FROM node_message", logger: PostgresTestServer.logger).wait().first?.decode(Int64.self)
        XCTAssertEqual(left, 0, "a row passed by reference is taken by its receiver")
        await a.close()
    }

    /// The server ends the listening connection: the bus listens again and later messages arrive.
    func test_aListeningConnectionTheServerEndedIsReplaced() async throws {
        let database = try migratedDatabase()
        let a = try PostgresBus(configuration: database, node: "a")
        let b = try PostgresBus(configuration: database, node: "b")
        let (inbox, run) = try await start(b)
        defer { run.cancel() }
        try await a.send(message("before"), to: "b")
        try await inbox.received(1)

        let admin = try PostgresTestServer.running().connect(database: database.database)
        defer { try? admin.close().wait() }
        let ended = try admin.query(
            "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE datname = current_database() AND query LIKE 'LISTEN%'",
            logger: PostgresTestServer.logger
        ).wait().first?.decode(Int64.self)
        XCTAssertEqual(ended, 1, "one listening backend")
        try await inbox.listening(2)
        try await a.send(message("after"), to: "b")
        try await inbox.received(2)
        XCTAssertEqual(inbox.messages.withLock { $0.map(\.id) }, ["before", "after"])
        await a.close()
    }

    /// A send the server refuses throws: here a message by reference to a database without the
    /// bus's table (not migrated).
    func test_aRefusedSendThrows() async throws {
        let database = try PostgresTestServer.running().database()
        let a = try PostgresBus(configuration: database, node: "a")
        do {
            try await a.send(message("big", body: String(repeating: "x", count: 10_000)), to: "b")
            XCTFail("sent into a table that does not exist")
        } catch {
            XCTAssertTrue("\(error)".contains("node_message") || "\(error)".contains("42P01"), "\(error)")
        }
        try await a.send(message("small"), to: "b")  // inline needs no table
        await a.close()
    }

    /// A payload that is not a message (another program's NOTIFY on the channel) is skipped.
    func test_aNotificationThatIsNoMessageIsSkipped() async throws {
        let database = try migratedDatabase()
        let a = try PostgresBus(configuration: database, node: "a")
        let b = try PostgresBus(configuration: database, node: "b")
        let (inbox, run) = try await start(b)
        defer { run.cancel() }
        let admin = try PostgresTestServer.running().connect(database: database.database)
        defer { try? admin.close().wait() }
        _ = try admin.query("SELECT pg_notify('sb_node_b', 'not json')", logger: PostgresTestServer.logger).wait()
        _ = try admin.query(#"SELECT pg_notify('sb_node_b', '{"ref":"nowhere"}')"#, logger: PostgresTestServer.logger).wait()
        try await a.send(message("real"), to: "b")
        try await inbox.received(1)
        XCTAssertEqual(inbox.messages.withLock { $0.map(\.id) }, ["real"])
        await a.close()
    }
}
