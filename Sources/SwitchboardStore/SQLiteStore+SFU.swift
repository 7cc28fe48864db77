import Foundation
import GRDB
import SwitchboardCore

extension SQLiteStore: SFUStore, LiveRoomReading {
    public func allSFUs() throws -> [SFURecord] {
        try pool.read { db in try Row.fetchAll(db, sql: "SELECT * FROM sfu ORDER BY id").compactMap(Self.sfu) }
    }

    public func saveSFU(_ record: SFURecord) throws {
        try pool.write { db in try Self.upsert(record, db) }
    }

    public func deleteSFU(_ id: SFUID) throws {
        try pool.write { db in try db.execute(sql: "DELETE FROM sfu WHERE id = ?", arguments: [id.rawValue]) }
    }

    public func allPlacements() throws -> [PlacementRecord] {
        try fold()
        return try pool.read { db in
            try Row.fetchAll(db, sql: "SELECT * FROM call_placement ORDER BY call_id").compactMap(Self.placement)
        }
    }

    public func replaceRegions(_ regions: RegionTable) throws {
        try pool.write { db in
            try db.execute(sql: "DELETE FROM region")
            for region in regions.regions.values.sorted(by: { $0.code < $1.code }) {
                try db.execute(
                    sql: "INSERT INTO region (code, name, kind, latitude, longitude) VALUES (?, ?, ?, ?, ?)",
                    arguments: [region.code, region.name, region.kind, region.point.latitude, region.point.longitude])
            }
        }
    }

    /// The region table as stored (for tests and operators).
    public func storedRegionCount() throws -> Int {
        try pool.read { db in try Int.fetchOne(db, sql: "SELECT count(*) FROM region") ?? 0 }
    }

    public func failover(down: SFUID, moves: [PlacementRecord], webhooks: [CallMutation]) throws {
        try CallMutation.validate(webhooks)
        let rows = try moves.map { try StoredRow(.savePlacement($0)) } + webhooks.flatMap { try StoredRow.rows($0) }
        // Placements committed before the failover reach the tables before its moves.
        try folding.withLock { () throws in
            if let log { try foldLocked(log) }
            try pool.write { db in
                try db.execute(sql: "UPDATE sfu SET state = 'down' WHERE id = ?", arguments: [down.rawValue])
                try StoredRow.execute(rows, in: db)
            }
        }
    }

    private static func upsert(_ record: SFURecord, _ db: Database) throws {
        try db.execute(
            sql: """
                INSERT INTO sfu (id, url, region, latitude, longitude, capacity, weight, state, secret, reported_load, last_heartbeat_at,
                  kind, admin_url, admin_secret_source)
                VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                ON CONFLICT(id) DO UPDATE SET url = excluded.url, region = excluded.region, latitude = excluded.latitude,
                  longitude = excluded.longitude, capacity = excluded.capacity, weight = excluded.weight, state = excluded.state,
                  secret = excluded.secret, reported_load = excluded.reported_load, last_heartbeat_at = excluded.last_heartbeat_at,
                  kind = excluded.kind, admin_url = excluded.admin_url, admin_secret_source = excluded.admin_secret_source
                """,
            arguments: [
                record.id.rawValue, record.url, record.region, record.latitude, record.longitude, record.capacity, record.weight,
                record.state.rawValue, record.secret, record.reportedLoad, record.lastHeartbeatAt,
                record.kind.rawValue, record.janus?.adminURL, record.janus?.adminSecret.description,
            ])
    }

    private static func sfu(_ row: Row) -> SFURecord? {
        guard let id = SFUID(row["id"]), let state = SFUNode.State(rawValue: row["state"]), let kind = SFUKind(rawValue: row["kind"])
        else { return nil }
        var janus: JanusAccess?
        if kind == .janus {
            // A Janus row without its admin access cannot be polled: skipped, like a row with a bad id.
            guard let url: String = row["admin_url"], let text: String = row["admin_secret_source"], let source = SecretSource(stored: text)
            else { return nil }
            janus = JanusAccess(adminURL: url, adminSecret: source)
        }
        return SFURecord(
            id: id, url: row["url"], region: row["region"], latitude: row["latitude"], longitude: row["longitude"],
            capacity: row["capacity"], weight: row["weight"], state: state, secret: row["secret"],
            reportedLoad: row["reported_load"], lastHeartbeatAt: row["last_heartbeat_at"], kind: kind, janus: janus)
    }

    private static func placement(_ row: Row) -> PlacementRecord? {
        let text: String = row["locations"]
        guard let id = SFUID(row["sfu_id"]), let locations = try? JSONDecoder().decode([LocationHint].self, from: Data(text.utf8))
        else { return nil }
        let sources: String = row["sources"]
        return PlacementRecord(
            callID: row["call_id"], sfu: id, locations: locations,
            sources: sources.split(separator: ",").compactMap { LocationSource(rawValue: String($0)) },
            assignedAt: row["assigned_at"], reason: row["reason"], room: (row["room"] as Int64?).map { UInt64(bitPattern: $0) })
    }
}
