import Foundation
import PostgresNIO
import SwitchboardCore
import SwitchboardPostgres
import SwitchboardTesting
import Synchronization
import XCTest

/// What every ``CallOwnership`` does with the store it fences, written once and run against the
/// in-memory twin and PostgreSQL (the classes below). Each check gets a new database several
/// nodes share: ``Database/node(_:)`` is one node's store and ownership on it (a live node),
/// ``Database/lapse(_:)`` lets a node's lease lapse.
struct CallOwnershipContract {
    struct Database {
        let node: (String) throws -> (store: any CallStore, ownership: any CallOwnership)
        let lapse: (String) throws -> Void
    }

    let makeDatabase: () throws -> Database

    private let c1 = CallCID(type: "default", id: "c1")!, c2 = CallCID(type: "default", id: "c2")!, c3 = CallCID(type: "default", id: "c3")!
    private let at = Date(timeIntervalSince1970: 1_800_000_000)

    private func call(_ cid: CallCID, custom: String = "") -> CallRecord {
        var record = CallRecord(cid: cid, createdBy: UserID("alice")!, createdAt: at)
        record.custom = .object(["v": .string(custom)])
        return record
    }

    private func assertRefused(_ body: @autoclosure () throws -> Void, _ words: String, line: UInt = #line) {
        XCTAssertThrowsError(try body(), line: line) { error in
            XCTAssertEqual((error as? SwitchboardError)?.code, .unavailable, "\(error)", line: line)
            XCTAssertTrue("\(error)".contains(words), "\(error)", line: line)
        }
    }

    /// A claim takes calls nobody holds (generation 1), keeps those another live node holds
    /// and leaves this node's own unchanged; repeated cids count once.
    func aClaimTakesFreeCallsAndLeavesLiveHolds() throws {
        let database = try makeDatabase()
        let a = try database.node("node-a").ownership, b = try database.node("node-b").ownership
        XCTAssertEqual(a.node, "node-a")
        XCTAssertEqual(try a.claim([c1, c2, c1]), [c1: CallOwner(node: "node-a", generation: 1), c2: CallOwner(node: "node-a", generation: 1)])
        XCTAssertEqual(try b.claim([c1, c3]), [c1: CallOwner(node: "node-a", generation: 1), c3: CallOwner(node: "node-b", generation: 1)])
        XCTAssertEqual(try b.claimOrReport([c1, c3]), [c1: CallOwner(node: "node-a", generation: 1)], "what stays elsewhere")
        XCTAssertEqual(try a.claim([c1]), [c1: CallOwner(node: "node-a", generation: 1)], "its own: unchanged")
        XCTAssertEqual(try a.claim([]), [:])
        XCTAssertEqual(a.held, [c1, c2])
        XCTAssertEqual(b.held, [c3], "a call another node keeps is not held")
        XCTAssertTrue(a.holds(c1))
        XCTAssertFalse(b.holds(c1))
        XCTAssertEqual(
            try b.owners(of: [c1, c2, c3, CallCID(type: "default", id: "never")!]),
            [c1: CallOwner(node: "node-a", generation: 1), c2: CallOwner(node: "node-a", generation: 1), c3: CallOwner(node: "node-b", generation: 1)])
    }

    /// Once a node's lease lapsed, another node's claim takes its calls with the next
    /// generation; the old owner, back, finds them held and cannot take them back while the new
    /// owner lives.
    func aLapsedOwnersCallsAreTakenOverWithTheNextGeneration() throws {
        let database = try makeDatabase()
        let a = try database.node("node-a").ownership, b = try database.node("node-b").ownership
        _ = try a.claim([c1, c2])
        try database.lapse("node-a")
        XCTAssertEqual(try b.claim([c1]), [c1: CallOwner(node: "node-b", generation: 2)])
        XCTAssertEqual(try b.owners(of: [c1, c2]), [c1: CallOwner(node: "node-b", generation: 2), c2: CallOwner(node: "node-a", generation: 1)],
            "only what was claimed moves")
        XCTAssertEqual(try b.claim([c1]), [c1: CallOwner(node: "node-b", generation: 2)], "no new generation for its own")
        try database.lapse("node-b")
        let again = try database.node("node-a").ownership
        XCTAssertEqual(try again.claim([c1]), [c1: CallOwner(node: "node-a", generation: 3)], "a live node again, the other lapsed")
    }

    /// Two nodes claiming a new call at the same time both get an owner for it, the same one:
    /// the one that waited on the other's claim sees it (the race of two clients on two nodes
    /// joining a call neither knows yet).
    func concurrentClaimsOfANewCallAgreeOnItsOwner() throws {
        let database = try makeDatabase()
        let nodes = [try database.node("node-a").ownership, try database.node("node-b").ownership]
        for index in 0..<40 {
            let cid = CallCID(type: "default", id: "race-\(index)")!
            let results = Mutex<[Int: Result<[CallCID: CallOwner], any Error>]>([:])
            DispatchQueue.concurrentPerform(iterations: 2) { which in
                let result = Result { try nodes[which].claim([cid]) }
                results.withLock { $0[which] = result }
            }
            let a = try XCTUnwrap(results.withLock { $0[0] }).get()[cid], b = try XCTUnwrap(results.withLock { $0[1] }).get()[cid]
            XCTAssertNotNil(a, "node-a got no owner for \(cid)")
            XCTAssertEqual(a, b, "\(cid)")
            XCTAssertEqual(a?.generation, 1)
        }
    }

    /// One node's writes of its calls and another node's claims of the same calls (its clients
    /// asking for them) at the same time: the claims wait for the writes or the writes for the
    /// claims, never each for the other (a deadlock the store would answer by refusing one).
    func writesAndClaimsOfTheSameCallsNeverDeadlock() throws {
        let database = try makeDatabase()
        let (storeA, a) = try database.node("node-a"), b = try database.node("node-b").ownership
        let cids = (0..<24).map { CallCID(type: "default", id: "busy-\($0)")! }
        _ = try a.claim(cids)
        try storeA.apply(cids.map { .saveCall(call($0)) })
        let failures = Mutex<[String]>([])
        let batches = (0..<30).map { round in cids.shuffled().map { CallMutation.saveCall(call($0, custom: "\(round)")) } }
        for batch in batches {
            let order = cids.shuffled()
            DispatchQueue.concurrentPerform(iterations: 2) { which in
                do {
                    if which == 0 {
                        try storeA.apply(batch)
                    } else {
                        let owners = try b.claim(order)
                        if owners.values.contains(where: { $0.node != "node-a" }) { failures.withLock { $0.append("moved: \(owners)") } }
                    }
                } catch {
                    failures.withLock { $0.append("\(error)") }
                }
            }
        }
        XCTAssertEqual(failures.withLock { $0 }, [])
    }

    /// Live calls nobody holds are orphans, by cid and up to the limit: a released one, and a
    /// lapsed node's; a live node's and an ended one are not. A claim takes them.
    func liveCallsNoLiveNodeHoldsAreOrphans() throws {
        let database = try makeDatabase()
        let (storeA, a) = try database.node("node-a"), (storeB, b) = try database.node("node-b")
        let c4 = CallCID(type: "default", id: "c4")!
        _ = try a.claim([c1, c3, c4])
        _ = try b.claim([c2])
        var ended = call(c4)
        ended.endedAt = at
        try storeA.apply([.saveCall(call(c1)), .saveCall(call(c3)), .saveCall(ended)])
        try storeB.apply([.saveCall(call(c2))])
        XCTAssertEqual(try b.orphans(limit: 10), [])

        try a.release([c3])
        XCTAssertEqual(try b.orphans(limit: 10), [c3], "released, still live")
        try database.lapse("node-a")
        XCTAssertEqual(try b.orphans(limit: 10), [c1, c3], "node-a's live call too; not its ended one, not node-b's")
        XCTAssertEqual(try b.orphans(limit: 1), [c1])
        XCTAssertEqual(try b.orphans(limit: 0), [])
        _ = try b.claim(try b.orphans(limit: 10))
        XCTAssertEqual(try b.orphans(limit: 10), [])
        XCTAssertEqual(b.held, [c1, c2, c3])
    }

    /// A node whose own lease lapsed claims nothing.
    func aLapsedNodeClaimsNothing() throws {
        let database = try makeDatabase()
        let a = try database.node("node-a").ownership
        try database.lapse("node-a")
        XCTAssertEqual(try a.claim([c1]), [:])
        XCTAssertEqual(try a.owners(of: [c1]), [:])
    }

    /// A release frees only this node's calls: another node then claims them.
    func aReleaseFreesOnlyThisNodesCalls() throws {
        let database = try makeDatabase()
        let a = try database.node("node-a").ownership, b = try database.node("node-b").ownership
        _ = try a.claim([c1])
        _ = try b.claim([c2])
        try a.release([c1, c2])
        XCTAssertEqual(try a.owners(of: [c1, c2]), [c2: CallOwner(node: "node-b", generation: 1)])
        XCTAssertEqual(a.held, [])
        XCTAssertEqual(b.held, [c2], "another node's release leaves its own")
        XCTAssertEqual(try b.claim([c1]), [c1: CallOwner(node: "node-b", generation: 1)])
    }

    /// The store writes a call only for the node holding it at the generation it claimed: a
    /// call never claimed, released, or taken over by another node is refused `unavailable` and
    /// the whole batch writes nothing; batches touching no call pass; the new owner writes.
    func writesNeedTheCallsHeldAtTheirGeneration() throws {
        let database = try makeDatabase()
        let (storeA, a) = try database.node("node-a"), (storeB, b) = try database.node("node-b")
        assertRefused(try storeA.apply([.saveCall(call(c1))]), "not claimed")
        let connection = ConnectionRecord(id: ClientConnectionID("conn-1"), userID: UserID("alice")!, resumeToken: "r", connectedAt: at, tokenExpiresAt: at.addingTimeInterval(3600))
        try storeA.apply([.saveConnection(connection)])
        _ = try a.claim([c1, c2])
        try storeA.apply([.saveCall(call(c1, custom: "a1")), .saveCall(call(c2, custom: "a1"))])
        try database.lapse("node-a")
        _ = try b.claim([c1])
        XCTAssertTrue(a.holds(c1), "as far as it knows, until a write finds out")
        assertRefused(try storeA.apply([.saveCall(call(c2, custom: "a2")), .saveCall(call(c1, custom: "a2"))]), "taken over")
        XCTAssertEqual(a.held, [c2], "the call it lost is forgotten, the other kept")
        XCTAssertEqual(try storeB.loadCall(c2)?.call.custom, .object(["v": .string("a1")]), "nothing of the refused batch, its other call neither")
        XCTAssertEqual(try storeB.loadCall(c1)?.call.custom, .object(["v": .string("a1")]))
        assertRefused(try storeA.apply([.saveCall(call(c1, custom: "a3"))]), "not claimed")
        try storeB.apply([.saveCall(call(c1, custom: "b1"))])
        XCTAssertEqual(try storeA.loadCall(c1)?.call.custom, .object(["v": .string("b1")]), "the old owner still reads")
        try storeA.apply([.saveCall(call(c2, custom: "a4"))])
        try b.release([c1])
        assertRefused(try storeB.apply([.saveCall(call(c1, custom: "b2"))]), "not claimed")
    }

    /// Connections (ConnectionHolding.swift): a node's store stamps the connections it saves
    /// with its node; a resume on another node takes one over by its token (its user's alone),
    /// naming the node that held it; a connection is lost once no row holds it, or its node's
    /// lease lapsed at least the window ago.
    func connectionsAreHeldByTheNodeThatSavedThemAndTakenOverByAResume() throws {
        let database = try makeDatabase()
        let a = try database.node("node-a").store, b = try database.node("node-b").store
        let (k1, k2) = try connections(savedBy: a)
        let alice = k1.userID, bob = k2.userID
        XCTAssertEqual(try a.loadLiveState().connections.map(\.node), ["node-a", "node-a"])

        XCTAssertNil(try b.takeConnection(resumeToken: "token-1", user: bob), "another user's token")
        XCTAssertNil(try b.takeConnection(resumeToken: "token-9", user: alice))
        let taken = try XCTUnwrap(try b.takeConnection(resumeToken: "token-1", user: alice))
        XCTAssertEqual(taken.previous, "node-a")
        XCTAssertEqual(taken.record.id, k1.id)
        XCTAssertEqual(taken.record.node, "node-b")
        XCTAssertEqual(try a.loadLiveState().connections.map(\.node), ["node-b", "node-a"])

        let gone = ClientConnectionID("k-gone")
        let asked: Set = [k1.id, k2.id, gone]
        XCTAssertEqual(try b.lostConnections(asked, after: .zero), [gone], "both nodes live: only the one no row holds")
        try database.lapse("node-a")
        XCTAssertEqual(try b.lostConnections(asked, after: .seconds(3600)), [gone], "node-a's clients still have the window to resume")
        XCTAssertEqual(try b.lostConnections(asked, after: .zero), [k2.id, gone])
        XCTAssertEqual(try b.lostConnections([], after: .zero), [])
    }

    /// A takeover names the connection's active sessions in live calls, whichever node runs
    /// them: not one that left, not one in an ended call, not another connection's.
    func aTakeoverNamesTheConnectionsActiveSessions() throws {
        let database = try makeDatabase()
        let a = try database.node("node-a"), b = try database.node("node-b").store
        let (k1, k2) = try connections(savedBy: a.store)
        _ = try a.ownership.claim([c1, c2])
        var ended = call(c2)
        ended.endedAt = at.addingTimeInterval(9)
        ended.endedReason = .endedByUser
        func session(_ id: String, in cid: CallCID, of connection: ConnectionRecord, leftAt: Date? = nil) -> SessionRecord {
            SessionRecord(
                sessionID: SessionID(id), cid: cid, callSession: 1, userID: connection.userID, connection: connection.id, role: .participant,
                joinedAt: at.addingTimeInterval(Double(id.count)), leftAt: leftAt)
        }
        let active = session("s-1", in: c1, of: k1)
        try a.store.apply([
            .saveCall(call(c1)), .saveCall(ended), .saveSession(active), .saveSession(session("s-22", in: c1, of: k1, leftAt: at.addingTimeInterval(5))),
            .saveSession(session("s-333", in: c2, of: k1)), .saveSession(session("s-4444", in: c1, of: k2)),
        ])
        let taken = try XCTUnwrap(try b.takeConnection(resumeToken: "token-1", user: k1.userID))
        XCTAssertEqual(taken.sessions.map(\.sessionID), [active.sessionID])
        XCTAssertEqual(taken.sessions.first?.cid, c1)
        XCTAssertEqual(try b.takeConnection(resumeToken: "token-1", user: k1.userID)?.sessions.map(\.sessionID), [active.sessionID], "taken again")
    }

    /// Alice's `k-1` (resume token `token-1`) and Bob's `k-2` (`token-2`), saved by `store`.
    private func connections(savedBy store: any CallStore) throws -> (ConnectionRecord, ConnectionRecord) {
        let k1 = ConnectionRecord(
            id: ClientConnectionID("k-1"), userID: UserID("alice")!, resumeToken: "token-1", connectedAt: at,
            tokenExpiresAt: at.addingTimeInterval(3600))
        let k2 = ConnectionRecord(
            id: ClientConnectionID("k-2"), userID: UserID("bob")!, resumeToken: "token-2", connectedAt: at, tokenExpiresAt: at.addingTimeInterval(3600))
        try store.apply([.saveConnection(k1), .saveConnection(k2)])
        return (k1, k2)
    }

    /// A node that has not heard its connection was taken over neither saves over the new
    /// holder's row nor deletes it; its own connections it saves and deletes as before.
    func aConnectionTakenOverIsNotWrittenByItsPreviousNode() throws {
        let database = try makeDatabase()
        let a = try database.node("node-a").store, b = try database.node("node-b").store
        var (k1, k2) = try connections(savedBy: a)
        _ = try XCTUnwrap(try b.takeConnection(resumeToken: "token-1", user: k1.userID))

        k1.detachedAt = at.addingTimeInterval(5)
        try a.apply([.saveConnection(k1)])
        var rows = try b.loadLiveState().connections
        XCTAssertEqual(rows.map(\.node), ["node-b", "node-a"])
        XCTAssertNil(rows.first?.detachedAt, "node-a's late detach is not written over node-b's row")

        try a.apply([.deleteConnection(k1.id), .deleteConnection(k2.id)])
        rows = try b.loadLiveState().connections
        XCTAssertEqual(rows.map(\.id), [k1.id], "node-a deletes its own connection, not the one node-b took over")

        k1.detachedAt = at.addingTimeInterval(9)
        try b.apply([.saveConnection(k1)])
        XCTAssertEqual(try a.loadLiveState().connections.first?.detachedAt, k1.detachedAt, "the holder writes its row")
        try b.apply([.deleteConnection(k1.id)])
        XCTAssertEqual(try a.loadLiveState().connections, [])

        // The row of a node whose lease lapsed is anyone's to write (the sweep of its connections).
        try b.apply([.saveConnection(k1)])
        try database.lapse("node-b")
        try a.apply([.deleteConnection(k1.id)])
        XCTAssertEqual(try a.loadLiveState().connections, [], "node-b is dead: its row goes")
    }
}

/// One test per ``CallOwnershipContract`` check, for each implementation.
protocol CallOwnershipContractCases {
    func test_aClaimTakesFreeCallsAndLeavesLiveHolds() throws
    func test_aLapsedOwnersCallsAreTakenOverWithTheNextGeneration() throws
    func test_aLapsedNodeClaimsNothing() throws
    func test_liveCallsNoLiveNodeHoldsAreOrphans() throws
    func test_concurrentClaimsOfANewCallAgreeOnItsOwner() throws
    func test_writesAndClaimsOfTheSameCallsNeverDeadlock() throws
    func test_aReleaseFreesOnlyThisNodesCalls() throws
    func test_writesNeedTheCallsHeldAtTheirGeneration() throws
    func test_connectionsAreHeldByTheNodeThatSavedThemAndTakenOverByAResume() throws
    func test_aConnectionTakenOverIsNotWrittenByItsPreviousNode() throws
    func test_aTakeoverNamesTheConnectionsActiveSessions() throws
}

final class InMemoryCallOwnershipContractTests: XCTestCase, CallOwnershipContractCases {
    private let contract = CallOwnershipContract(makeDatabase: {
        let base = InMemoryCallStore(), table = InMemoryCallOwnership.Table(calls: base)
        return CallOwnershipContract.Database(
            node: { node in
                let ownership = InMemoryCallOwnership(node: node, table: table)
                return (OwnedCallStore(base: base, ownership: ownership), ownership)
            },
            lapse: { table.lapse($0) })
    })
    func test_aClaimTakesFreeCallsAndLeavesLiveHolds() throws { try contract.aClaimTakesFreeCallsAndLeavesLiveHolds() }
    func test_aLapsedOwnersCallsAreTakenOverWithTheNextGeneration() throws { try contract.aLapsedOwnersCallsAreTakenOverWithTheNextGeneration() }
    func test_aLapsedNodeClaimsNothing() throws { try contract.aLapsedNodeClaimsNothing() }
    func test_liveCallsNoLiveNodeHoldsAreOrphans() throws { try contract.liveCallsNoLiveNodeHoldsAreOrphans() }
    func test_concurrentClaimsOfANewCallAgreeOnItsOwner() throws { try contract.concurrentClaimsOfANewCallAgreeOnItsOwner() }
    func test_writesAndClaimsOfTheSameCallsNeverDeadlock() throws { try contract.writesAndClaimsOfTheSameCallsNeverDeadlock() }
    func test_aReleaseFreesOnlyThisNodesCalls() throws { try contract.aReleaseFreesOnlyThisNodesCalls() }
    func test_writesNeedTheCallsHeldAtTheirGeneration() throws { try contract.writesNeedTheCallsHeldAtTheirGeneration() }
    func test_connectionsAreHeldByTheNodeThatSavedThemAndTakenOverByAResume() throws {
        try contract.connectionsAreHeldByTheNodeThatSavedThemAndTakenOverByAResume()
    }
    func test_aConnectionTakenOverIsNotWrittenByItsPreviousNode() throws { try contract.aConnectionTakenOverIsNotWrittenByItsPreviousNode() }
    func test_aTakeoverNamesTheConnectionsActiveSessions() throws { try contract.aTakeoverNamesTheConnectionsActiveSessions() }
}

/// Against a real PostgreSQL server: each node a store of its own with a registered `node` row
/// (its lease a minute; lapsed by setting it back on the server's clock).
final class PostgresCallOwnershipContractTests: XCTestCase, CallOwnershipContractCases {
    private var contract: CallOwnershipContract {
        CallOwnershipContract(makeDatabase: {
            let configuration = try PostgresTestServer.running().database()
            return CallOwnershipContract.Database(
                node: { node in
                    let store = try PostgresStore(configuration: configuration)
                    try store.registerNode(id: node, description: "test", lease: .seconds(60))
                    return (store, store.ownCalls(as: node))
                },
                lapse: { node in
                    let connection = try PostgresTestServer.running().connect(database: configuration.database)
                    defer { try? connection.close().wait() }
                    _ = try connection.query("UPDATE node SET lease_until = now() - interval '1 second' WHERE id = \(node)", logger: PostgresTestServer.logger).wait()
                })
        })
    }
    func test_aClaimTakesFreeCallsAndLeavesLiveHolds() throws { try contract.aClaimTakesFreeCallsAndLeavesLiveHolds() }
    func test_aLapsedOwnersCallsAreTakenOverWithTheNextGeneration() throws { try contract.aLapsedOwnersCallsAreTakenOverWithTheNextGeneration() }
    func test_aLapsedNodeClaimsNothing() throws { try contract.aLapsedNodeClaimsNothing() }
    func test_liveCallsNoLiveNodeHoldsAreOrphans() throws { try contract.liveCallsNoLiveNodeHoldsAreOrphans() }
    func test_concurrentClaimsOfANewCallAgreeOnItsOwner() throws { try contract.concurrentClaimsOfANewCallAgreeOnItsOwner() }
    func test_writesAndClaimsOfTheSameCallsNeverDeadlock() throws { try contract.writesAndClaimsOfTheSameCallsNeverDeadlock() }
    func test_aReleaseFreesOnlyThisNodesCalls() throws { try contract.aReleaseFreesOnlyThisNodesCalls() }
    func test_writesNeedTheCallsHeldAtTheirGeneration() throws { try contract.writesNeedTheCallsHeldAtTheirGeneration() }
    func test_connectionsAreHeldByTheNodeThatSavedThemAndTakenOverByAResume() throws {
        try contract.connectionsAreHeldByTheNodeThatSavedThemAndTakenOverByAResume()
    }
    func test_aConnectionTakenOverIsNotWrittenByItsPreviousNode() throws { try contract.aConnectionTakenOverIsNotWrittenByItsPreviousNode() }
    func test_aTakeoverNamesTheConnectionsActiveSessions() throws { try contract.aTakeoverNamesTheConnectionsActiveSessions() }
}
