import Foundation
import PostgresNIO
import SwitchboardCore
import SwitchboardPostgres
import Synchronization
import XCTest

/// What only the PostgreSQL store does: its own migrations (several daemons opening one database
/// at once, a database a newer build migrated), its URL, and a lost or missing server.
final class PostgresStoreTests: XCTestCase {
    private func database() throws -> PostgresStore.Configuration {
        try PostgresTestServer.running().database()
    }

    private func admin(_ configuration: PostgresStore.Configuration, _ sql: String) throws {
        let connection = try PostgresTestServer.running().connect(database: configuration.database)
        defer { try? connection.close().wait() }
        _ = try connection.query(PostgresQuery(unsafeSQL: sql), logger: PostgresTestServer.logger).wait()
    }

    func test_aNewDatabaseIsMigratedOnceAndReopeningAppliesNothing() throws {
        let configuration = try database()
        let first = try PostgresStore(configuration: configuration)
        XCTAssertEqual(first.migrationsApplied, PostgresStore.knownMigrations)
        XCTAssertEqual(PostgresStore.knownMigrations.first, "v1_audit_log")
        first.close()
        let again = try PostgresStore(configuration: configuration)
        XCTAssertEqual(again.migrationsApplied, [])
        XCTAssertEqual(try again.appliedMigrations(), PostgresStore.knownMigrations)
    }

    /// Daemons of a cluster start together: each migration is applied by exactly one of them
    /// (an advisory lock), and every one opens.
    func test_storesOpeningOneDatabaseAtOnceApplyEachMigrationOnce() throws {
        let configuration = try database()
        let results = Mutex<(applied: [String], failures: [String])>(([], []))
        DispatchQueue.concurrentPerform(iterations: 4) { _ in
            do {
                let store = try PostgresStore(configuration: configuration)
                results.withLock { $0.applied += store.migrationsApplied }
                store.close()
            } catch {
                results.withLock { $0.failures.append("\(error)") }
            }
        }
        XCTAssertEqual(results.withLock { $0.failures }, [])
        XCTAssertEqual(results.withLock { $0.applied }.sorted(), PostgresStore.knownMigrations.sorted())
    }

    func test_aDatabaseANewerBuildMigratedIsRefusedNamingTheMigration() throws {
        let configuration = try database()
        try PostgresStore(configuration: configuration).close()
        try admin(configuration, "INSERT INTO switchboard_migrations (name) VALUES ('v999_from_the_future')")
        XCTAssertThrowsError(try PostgresStore(configuration: configuration)) { error in
            XCTAssertEqual((error as? SwitchboardError)?.code, .invalidConfiguration)
            XCTAssertTrue("\(error)".contains("v999_from_the_future"), "\(error)")
        }
    }

    func test_noServerIsUnavailable() throws {
        let port = try PostgresTestServer.running().port
        // The test server's port with another host part: nothing listens on 127.0.0.2 there.
        let configuration = PostgresStore.Configuration(host: "127.0.0.2", port: port, username: "switchboard", database: "nowhere")
        XCTAssertThrowsError(try PostgresStore(configuration: configuration)) { error in
            XCTAssertEqual((error as? SwitchboardError)?.code, .unavailable, "\(error)")
        }
    }

    /// The server ends the store's connection (a restart, a failover): the next calls connect
    /// again; a call that fails meanwhile fails as `unavailable`, never otherwise.
    func test_aLostConnectionIsReplacedAtTheNextCall() throws {
        let configuration = try database()
        let store = try PostgresStore(configuration: configuration)
        let entry = try store.append(AuditEntry(at: Date(timeIntervalSince1970: 1_800_000_000), actor: "a", action: "drain"))
        XCTAssertTrue(store.isWritable())
        try admin(
            configuration,
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = '\(configuration.database)' AND pid <> pg_backend_pid()")
        var read: [AuditEntry]?
        for _ in 0..<2 where read == nil {
            do {
                read = try store.entries(limit: 10, before: nil)
            } catch {
                XCTAssertEqual((error as? SwitchboardError)?.code, .unavailable, "\(error)")
            }
        }
        XCTAssertEqual(read?.map(\.id), [entry.id], "read again over a new connection")
        XCTAssertTrue(store.isWritable())
    }

    func test_urlsNameWhatIsWrong() throws {
        let parsed = try PostgresStore.Configuration(url: "postgres://sb:pw@db.example:6543/switchboard")
        XCTAssertEqual([parsed.host, "\(parsed.port)", parsed.username, parsed.password ?? "", parsed.database], ["db.example", "6543", "sb", "pw", "switchboard"])
        XCTAssertEqual(try PostgresStore.Configuration(url: "postgresql://sb@127.0.0.1/calls").port, 5432)
        for (url, says) in [
            ("mysql://sb@h/db", "postgres://"), ("postgres://h/db", "no user"), ("postgres://sb@h", "no database"), ("postgres://sb@h/a/b", "no database"),
            ("postgres://sb@/db", "no host"), ("postgres://sb:secretpw@h:70000/db", "port"),
        ] {
            XCTAssertThrowsError(try PostgresStore.Configuration(url: url), url) { error in
                XCTAssertEqual((error as? SwitchboardError)?.code, .invalidConfiguration, url)
                XCTAssertTrue("\(error)".contains(says), "\(url): \(error)")
                XCTAssertFalse("\(error)".contains("secretpw"), "never the password")
            }
        }
    }

    /// Called on an event loop's thread (the in-process webhook client's), the store does its
    /// blocking work on another thread: no NIO refusal, the same answer.
    /// From every loop of the shared event loop group (the webhook client's): the call runs off
    /// the loop, and the store's connection is on none of them, so a blocked loop never holds up
    /// its own statement (the store's connections once ran on the shared group, and a call from
    /// the loop that hosted its connection waited forever).
    func test_aCallFromAnEventLoopIsMadeOffIt() throws {
        let store = try PostgresStore(configuration: try database())
        let entry = try store.append(AuditEntry(at: Date(timeIntervalSince1970: 1_800_000_000), actor: "a", action: "drain"))
        for loop in MultiThreadedEventLoopGroup.singleton.makeIterator() {
            let answered = DispatchSemaphore(value: 0)
            let read = loop.submit { () throws -> [Int64?] in
                XCTAssertTrue(loop.inEventLoop)
                return try store.entries(limit: 10, before: nil).map(\.id)
            }
            read.whenComplete { _ in answered.signal() }
            guard answered.wait(timeout: .now() + 20) == .success else { return XCTFail("a call from \(loop) never returned") }
            XCTAssertEqual(try read.wait(), [entry.id])
        }
    }

    /// A server that stops answering without closing the connection (frozen, or its network
    /// gone silent): the statement fails with `unavailable` at the statement timeout instead of
    /// waiting forever, and once the server answers again the next call connects anew.
    func test_aServerThatStopsAnsweringFailsTheStatementAtItsTimeoutAndTheStoreRecovers() throws {
        let configuration = try database()
        let store = try PostgresStore(configuration: configuration, statementTimeout: .milliseconds(300))
        _ = try store.entries(limit: 1, before: nil)
        let admin = try PostgresTestServer.running().connect(database: configuration.database)
        defer { try? admin.close().wait() }
        let backends = try admin.query(
            PostgresQuery(unsafeSQL: "SELECT pid FROM pg_stat_activity WHERE datname = '\(configuration.database)' AND pid <> pg_backend_pid()"),
            logger: PostgresTestServer.logger
        ).wait().rows.map { try $0.decode(Int32.self) }
        XCTAssertEqual(backends.count, 1, "the store's one connection")
        for pid in backends { XCTAssertEqual(kill(pid, SIGSTOP), 0) }
        var stopped = true
        defer { if stopped { for pid in backends { kill(pid, SIGCONT) } } }
        let started = ContinuousClock.now
        XCTAssertThrowsError(try store.entries(limit: 1, before: nil)) { error in
            XCTAssertEqual((error as? SwitchboardError)?.code, .unavailable, "\(error)")
        }
        XCTAssertLessThan(ContinuousClock.now - started, .seconds(5), "failed at its timeout, not after TCP gave up")
        for pid in backends { kill(pid, SIGCONT) }
        stopped = false
        XCTAssertEqual(try store.entries(limit: 1, before: nil), [], "a new connection")
        XCTAssertTrue(store.isWritable())
    }

    /// One node leads at a time: a second claim gets nothing while the leader's lease runs;
    /// once it lapses (set back here on the server's clock) the other node takes the lead with
    /// the next generation and the old leader's renewal says it lost it; a lead given up is
    /// taken at once. Every node's row is listed with the leader and the server's clock.
    func test_oneNodeLeadsAtATimeAndATakeoverIsTheNextGeneration() throws {
        let configuration = try database()
        let first = try PostgresStore(configuration: configuration)
        let second = try PostgresStore(configuration: configuration)
        try first.registerNode(id: "node-a", description: "host-a pid 1", lease: .seconds(60), sockets: 3)
        try second.registerNode(id: "node-b", description: "host-b pid 2", lease: .seconds(60))
        try second.renewNode(id: "node-b", description: "host-b pid 2", lease: .seconds(60), sockets: 17)
        XCTAssertEqual(try first.nodes().map(\.sockets), [3, 17], "each node's sockets, as of its last renewal")
        XCTAssertNil(try first.leadership(), "nobody led yet")
        let a = try XCTUnwrap(try first.claimLeadership(node: "node-a", lease: .seconds(60)))
        XCTAssertEqual([a.node, "\(a.generation)"], ["node-a", "1"])
        XCTAssertNil(try second.claimLeadership(node: "node-b", lease: .seconds(60)), "node-a's lease runs")
        XCTAssertNil(try first.claimLeadership(node: "node-a", lease: .seconds(60)), "a leader renews, it does not claim again")
        XCTAssertTrue(try first.renewLeadership(a.fence, lease: .seconds(60)))
        XCTAssertEqual(try second.leadership()?.fence, a.fence)

        try admin(configuration, "UPDATE leader SET lease_until = now() - interval '1 second'")
        XCTAssertTrue(try first.renewLeadership(a.fence, lease: .seconds(60)), "a lapsed lease nobody took is renewed")
        try admin(configuration, "UPDATE leader SET lease_until = now() - interval '1 second'")
        let b = try XCTUnwrap(try second.claimLeadership(node: "node-b", lease: .seconds(60)))
        XCTAssertEqual([b.node, "\(b.generation)"], ["node-b", "2"])
        XCTAssertFalse(try first.renewLeadership(a.fence, lease: .seconds(60)), "taken over while its lease had lapsed")
        XCTAssertGreaterThan(b.leaseUntil, Date())

        let cluster = try first.cluster()
        XCTAssertEqual(cluster.nodes.map(\.id), ["node-a", "node-b"])
        XCTAssertEqual(cluster.leader?.fence, b.fence)
        XCTAssertLessThan(abs(cluster.now.timeIntervalSinceNow), 60, "the server's clock")
        XCTAssertTrue(cluster.nodes.allSatisfy { $0.leaseUntil > cluster.now && $0.lastSeen <= cluster.now })

        try second.releaseLeadership(b.fence)
        let again = try XCTUnwrap(try first.claimLeadership(node: "node-a", lease: .seconds(60)), "given up: taken at once")
        XCTAssertEqual(again.generation, 3)
        try second.removeNode(id: "node-b")
        XCTAssertEqual(try first.nodes().map(\.id), ["node-a"])
    }

    /// A fenced store writes only while its leadership stands: once another node took the lead,
    /// every write is refused `unavailable`, stores nothing and reports the fence; the new
    /// leader writes; reads go on for both.
    func test_writesCarryTheLeadershipAndAreRefusedOnceAnotherNodeTookItOver() throws {
        let configuration = try database()
        let old = try PostgresStore(configuration: configuration)
        let new = try PostgresStore(configuration: configuration)
        let a = try XCTUnwrap(try old.claimLeadership(node: "node-a", lease: .seconds(60)))
        old.fence = a.fence
        let fenced = Mutex<[PostgresStore.Fence]>([])
        old.onFenced = { fence in fenced.withLock { $0.append(fence) } }
        let entry = AuditEntry(at: Date(timeIntervalSince1970: 1_800_000_000), actor: "a", action: "drain")
        _ = try old.append(entry)

        try admin(configuration, "UPDATE leader SET lease_until = now() - interval '1 second'")
        let b = try XCTUnwrap(try new.claimLeadership(node: "node-b", lease: .seconds(60)))
        new.fence = b.fence
        let call = CallRecord(cid: CallCID(type: "default", id: "c1")!, createdBy: UserID("alice")!, createdAt: Date(timeIntervalSince1970: 1_800_000_000))
        let writes: [() throws -> Void] = [
            { _ = try old.append(entry) }, { try old.apply([.saveCall(call)]) }, { try old.replaceRegions(RegionTable.builtin) },
            { _ = try old.pruneWebhooks(createdBefore: Date(), limit: 10) }, { _ = try old.sharedSecret("s", proposed: String(repeating: "a", count: 32)) },
        ]
        for write in writes {
            XCTAssertThrowsError(try write()) { error in
                XCTAssertEqual((error as? SwitchboardError)?.code, .unavailable)
                XCTAssertTrue("\(error)".contains("no longer leads"), "\(error)")
            }
        }
        XCTAssertEqual(fenced.withLock { $0 }, Array(repeating: a.fence, count: writes.count))
        XCTAssertEqual(try old.entries(limit: 10, before: nil).count, 1, "only the write made while it led")
        XCTAssertNil(try old.loadCall(call.cid))

        try new.apply([.saveCall(call)])
        XCTAssertEqual(try old.loadCall(call.cid)?.call.cid, call.cid, "the old leader still reads")
        XCTAssertEqual(try new.sharedSecret("s", proposed: String(repeating: "b", count: 32)), String(repeating: "b", count: 32))
        XCTAssertEqual(try new.sharedSecret("s", proposed: String(repeating: "c", count: 32)), String(repeating: "b", count: 32), "the first one stays")
    }

    /// A node's row says how it runs calls; a starting daemon asks which live nodes run them
    /// otherwise (itself, lapsed nodes and rows from before the column excluded).
    func test_theLiveNodesRunningCallsOtherwiseAreFound() throws {
        let configuration = try database()
        let store = try PostgresStore(configuration: configuration)
        try store.registerNode(id: "node-a", description: "a", lease: .seconds(60), calls: "spread")
        try store.registerNode(id: "node-b", description: "b", lease: .seconds(60), calls: "leader")
        try store.registerNode(id: "node-c", description: "c", lease: .seconds(60))
        try store.registerNode(id: "node-d", description: "d", lease: .seconds(60), calls: "spread")
        try admin(configuration, "UPDATE node SET lease_until = now() - interval '1 second' WHERE id = 'node-d'")
        XCTAssertEqual(try store.nodesRunningCalls(otherThan: "leader", except: "node-x"), ["node-a": "spread"])
        XCTAssertEqual(try store.nodesRunningCalls(otherThan: "spread", except: "node-x"), ["node-b": "leader"])
        XCTAssertEqual(try store.nodesRunningCalls(otherThan: "spread", except: "node-b"), [:], "itself")
        try admin(configuration, "DELETE FROM node WHERE id = 'node-a'")
        try store.renewNode(id: "node-a", description: "a", lease: .seconds(60), calls: "spread")
        XCTAssertEqual(try store.nodesRunningCalls(otherThan: "leader", except: "node-x"), ["node-a": "spread"], "registered again with its mode")
    }

    /// Each node's live calls are those whose claim it holds, ended ones not counted.
    func test_eachNodeCountsTheLiveCallsItHolds() throws {
        let configuration = try database()
        let a = try PostgresStore(configuration: configuration), b = try PostgresStore(configuration: configuration)
        try a.registerNode(id: "node-a", description: "a", lease: .seconds(60))
        try b.registerNode(id: "node-b", description: "b", lease: .seconds(60))
        let ownsA = a.ownCalls(as: "node-a"), ownsB = b.ownCalls(as: "node-b")
        let at = Date(timeIntervalSince1970: 1_800_000_000)
        let cids = ["c1", "c2", "c3"].map { CallCID(type: "default", id: $0)! }
        _ = try ownsA.claim([cids[0], cids[1]])
        _ = try ownsB.claim([cids[2]])
        var ended = CallRecord(cid: cids[1], createdBy: UserID("alice")!, createdAt: at)
        ended.endedAt = at
        ended.endedReason = .endedByUser
        try a.apply([.saveCall(CallRecord(cid: cids[0], createdBy: UserID("alice")!, createdAt: at)), .saveCall(ended)])
        try b.apply([.saveCall(CallRecord(cid: cids[2], createdBy: UserID("bob")!, createdAt: at))])
        XCTAssertEqual(try a.nodes().map(\.calls), [1, 1])
        XCTAssertEqual(try a.cluster().nodes.map(\.calls), [1, 1])
        try ownsB.release([cids[2]])
        XCTAssertEqual(try a.nodes().map(\.calls), [1, 0])
    }

    /// A leader's store that runs calls checks both in one statement: its lead (a takeover
    /// deposes it, the fence reported) and its calls (one taken over refuses the write).
    func test_aLeadersWriteChecksItsLeadAndItsCallsTogether() throws {
        let configuration = try database()
        let old = try PostgresStore(configuration: configuration), other = try PostgresStore(configuration: configuration)
        try old.registerNode(id: "node-a", description: "a", lease: .seconds(60))
        try other.registerNode(id: "node-b", description: "b", lease: .seconds(60))
        let a = try XCTUnwrap(try old.claimLeadership(node: "node-a", lease: .seconds(60)))
        old.fence = a.fence
        let fenced = Mutex<[PostgresStore.Fence]>([])
        old.onFenced = { fence in fenced.withLock { $0.append(fence) } }
        let owns = old.ownCalls(as: "node-a"), othersOwn = other.ownCalls(as: "node-b")
        let at = Date(timeIntervalSince1970: 1_800_000_000)
        let c1 = CallCID(type: "default", id: "c1")!, c2 = CallCID(type: "default", id: "c2")!
        _ = try owns.claim([c1, c2])
        try old.apply([.saveCall(CallRecord(cid: c1, createdBy: UserID("alice")!, createdAt: at))])

        try admin(configuration, "UPDATE node SET lease_until = now() - interval '1 second' WHERE id = 'node-a'")
        XCTAssertEqual(try othersOwn.claim([c2]), [c2: CallOwner(node: "node-b", generation: 2)])
        try admin(configuration, "UPDATE node SET lease_until = now() + interval '1 minute' WHERE id = 'node-a'")
        XCTAssertThrowsError(try old.apply([.saveCall(CallRecord(cid: c2, createdBy: UserID("alice")!, createdAt: at))])) { error in
            XCTAssertTrue("\(error)".contains("taken over"), "\(error)")
        }
        XCTAssertEqual(fenced.withLock { $0 }, [], "still the leader")
        try old.apply([.saveCall(CallRecord(cid: c1, createdBy: UserID("bob")!, createdAt: at))])

        try admin(configuration, "UPDATE leader SET lease_until = now() - interval '1 second'")
        _ = try XCTUnwrap(try other.claimLeadership(node: "node-b", lease: .seconds(60)))
        XCTAssertThrowsError(try old.apply([.saveCall(CallRecord(cid: c1, createdBy: UserID("carol")!, createdAt: at))])) { error in
            XCTAssertTrue("\(error)".contains("no longer leads"), "\(error)")
        }
        XCTAssertEqual(fenced.withLock { $0 }, [a.fence])
        XCTAssertEqual(try old.loadCall(c1)?.call.createdBy.rawValue, "bob", "nothing after the takeover")
    }
}
