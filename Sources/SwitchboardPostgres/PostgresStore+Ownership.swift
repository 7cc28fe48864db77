import Foundation
import PostgresNIO
import SwitchboardCore
import Synchronization

/// Which node runs each call (`call_owner`, ADR 0012 step 3), for one node of the database:
/// made by ``PostgresStore/ownCalls(as:)``, after which every ``PostgresStore/apply(_:)`` of
/// that store checks, inside its transaction, that the node still holds each call the batch
/// writes at the generation it claimed (a row lock, `FOR SHARE`, so a takeover waits for the
/// write under way). A node holds its calls while its `node` row's lease runs: no renewal per
/// call.
public final class PostgresCallOwnership: CallOwnership, Sendable {
    public let node: String
    let session: PostgresSession
    /// The generation this node claimed each call it holds at, by cid.
    private let claimed = Mutex<[String: Int64]>([:])

    init(node: String, session: PostgresSession) {
        self.node = node
        self.session = session
    }

    public func claim(_ cids: [CallCID]) throws -> [CallCID: CallOwner] {
        // Sorted, one each: rows are locked in one order by every node (no deadlock between
        // two claims), and an upsert may not touch a row twice.
        let texts = Set(cids.map(\.cid)).sorted()
        guard !texts.isEmpty else { return [:] }
        var binds = PostgresBindings()
        binds.append(texts)
        binds.append(node)
        // One statement, so one round trip and no transaction around it. A node claims only
        // while its own lease runs; it takes a call nobody holds, or one whose owner's lease
        // lapsed (the next generation), and keeps its own. The rows it did not change are read
        // as the statement found them (a data-modifying WITH sees the table as it was).
        let owners = try session.withConnection { connection in
            var owners: [String: CallOwner] = [:]
            for row in try connection.query(
                """
                WITH taken AS (
                  INSERT INTO call_owner (cid, node, generation, claimed_at)
                  SELECT c, $2, 1, now() FROM unnest($1::text[]) AS c
                  WHERE EXISTS (SELECT 1 FROM node WHERE id = $2 AND lease_until > now())
                  ON CONFLICT (cid) DO UPDATE SET node = EXCLUDED.node, generation = call_owner.generation + 1, claimed_at = now()
                  WHERE call_owner.node <> EXCLUDED.node
                    AND NOT EXISTS (SELECT 1 FROM node WHERE node.id = call_owner.node AND node.lease_until > now())
                  RETURNING cid, node, generation)
                SELECT cid, node, generation FROM taken
                UNION ALL
                SELECT cid, node, generation FROM call_owner WHERE cid = ANY($1::text[]) AND cid NOT IN (SELECT cid FROM taken)
                """, binds)
            {
                let (cid, node, generation) = try row.decode((String, String, Int64).self)
                owners[cid] = CallOwner(node: node, generation: generation)
            }
            // A row another node's claim committed while this statement waited on it is not in
            // the statement's snapshot (its insert conflicted, its read ran before): read again.
            let unseen = texts.filter { owners[$0] == nil }
            if !unseen.isEmpty { owners.merge(try Self.owners(unseen, connection)) { seen, _ in seen } }
            return owners
        }
        claimed.withLock { claimed in
            for text in texts {
                if let owner = owners[text], owner.node == node { claimed[text] = owner.generation } else { claimed[text] = nil }
            }
        }
        return Self.keyed(owners)
    }

    public func release(_ cids: [CallCID]) throws {
        let texts = Set(cids.map(\.cid)).sorted()
        guard !texts.isEmpty else { return }
        var binds = PostgresBindings()
        binds.append(node)
        binds.append(texts)
        // Locked in cid order first, as claims lock them.
        try session.withConnection {
            try $0.execute(
                """
                DELETE FROM call_owner WHERE cid IN (
                  SELECT cid FROM call_owner WHERE node = $1 AND cid = ANY($2::text[]) ORDER BY cid FOR UPDATE)
                """, binds)
        }
        claimed.withLock { claimed in for text in texts { claimed[text] = nil } }
    }

    public func owners(of cids: [CallCID]) throws -> [CallCID: CallOwner] {
        let texts = Set(cids.map(\.cid)).sorted()
        guard !texts.isEmpty else { return [:] }
        return Self.keyed(try session.withConnection { try Self.owners(texts, $0) })
    }

    public func holds(_ cid: CallCID) -> Bool {
        claimed.withLock { $0[cid.cid] != nil }
    }

    public func orphans(limit: Int) throws -> [CallCID] {
        guard limit > 0 else { return [] }
        var binds = PostgresBindings()
        binds.append(Int64(limit))
        return try session.withConnection { connection in
            try connection.query(
                """
                SELECT c.cid FROM call c LEFT JOIN call_owner o ON o.cid = c.cid
                WHERE c.ended_at IS NULL
                  AND (o.cid IS NULL OR NOT EXISTS (SELECT 1 FROM node n WHERE n.id = o.node AND n.lease_until > now()))
                ORDER BY c.cid LIMIT $1
                """, binds
            ).compactMap { row in CallCID(cid: try row.decode(String.self)) }
        }
    }

    public var held: Set<CallCID> {
        Set(claimed.withLock { $0.keys.compactMap { CallCID(cid: $0) } })
    }

    /// The generations a batch touching `cids` must still hold; `unavailable` for a call this
    /// node never claimed (or released, or lost).
    func generations(of cids: Set<String>) throws -> [(cid: String, generation: Int64)] {
        try claimed.withLock { claimed in
            try cids.sorted().map { cid in
                guard let generation = claimed[cid] else { throw SwitchboardError(.unavailable, "call \(cid) is not claimed by node \(node)") }
                return (cid, generation)
            }
        }
    }

    /// The check of every write: this node still holds each call at its generation, the rows
    /// held until the transaction ends. A call taken over is forgotten and the write refused.
    /// The rows are locked in cid order, the order claims lock them in, so a write and another
    /// node's claim of the same calls never wait on each other.
    func checkHeld(_ held: [(cid: String, generation: Int64)], _ connection: PostgresSession.Connection) throws {
        guard !held.isEmpty else { return }
        var binds = PostgresBindings()
        binds.append(held.map(\.cid))
        binds.append(held.map(\.generation))
        binds.append(node)
        let rows = try connection.query(
            """
            SELECT o.cid FROM call_owner o JOIN unnest($1::text[], $2::bigint[]) AS u(cid, generation)
              ON o.cid = u.cid AND o.generation = u.generation
            WHERE o.node = $3 ORDER BY o.cid FOR SHARE OF o
            """, binds)
        let still = Set(try rows.map { try $0.decode(String.self) })
        let lost = held.map(\.cid).filter { !still.contains($0) }
        guard !lost.isEmpty else { return }
        claimed.withLock { claimed in for cid in lost { claimed[cid] = nil } }
        throw SwitchboardError(.unavailable, "call \(lost.joined(separator: ", ")) was taken over from node \(node) by another node")
    }

    private static func owners(_ texts: [String], _ connection: PostgresSession.Connection) throws -> [String: CallOwner] {
        var binds = PostgresBindings()
        binds.append(texts)
        var owners: [String: CallOwner] = [:]
        for row in try connection.query("SELECT cid, node, generation FROM call_owner WHERE cid = ANY($1::text[])", binds) {
            let (cid, node, generation) = try row.decode((String, String, Int64).self)
            owners[cid] = CallOwner(node: node, generation: generation)
        }
        return owners
    }

    private static func keyed(_ owners: [String: CallOwner]) -> [CallCID: CallOwner] {
        Dictionary(uniqueKeysWithValues: owners.compactMap { key, owner in CallCID(cid: key).map { ($0, owner) } })
    }
}

extension PostgresStore {
    /// Makes this store's writes those of node `node`, which runs the calls it claims through
    /// the returned ownership: from now on ``apply(_:)`` refuses a batch touching a call the node
    /// does not hold at the generation it claimed.
    public func ownCalls(as node: String) -> PostgresCallOwnership {
        let ownership = PostgresCallOwnership(node: node, session: session)
        callOwnership = ownership
        return ownership
    }
}
