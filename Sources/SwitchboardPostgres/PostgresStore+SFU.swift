import Foundation
import PostgresNIO
import SwitchboardCore

/// The SFU table, the region table and failovers on PostgreSQL; placements are written by call
/// batches (``PostgresStore/apply(_:)``) and read with ``PostgresStore/allPlacements()``.
extension PostgresStore: SFUStore {
    public func allSFUs() throws -> [SFURecord] {
        try session.withConnection { connection in
            try connection.query("SELECT * FROM sfu ORDER BY id").compactMap(Self.sfu)
        }
    }

    public func saveSFU(_ record: SFURecord) throws {
        var binds = PostgresBindings()
        binds.append(record.id.rawValue)
        binds.append(record.url)
        binds.append(record.region)
        binds.append(record.latitude)
        binds.append(record.longitude)
        binds.append(Int64(record.capacity))
        binds.append(record.weight)
        binds.append(record.state.rawValue)
        binds.append(record.secret)
        binds.append(Int64(record.reportedLoad))
        binds.append(PostgresTime.bind(record.lastHeartbeatAt))
        binds.append(record.kind.rawValue)
        binds.append(record.janus?.adminURL)
        binds.append(record.janus?.adminSecret.description)
        try write { connection in
            try connection.execute(
                """
                INSERT INTO sfu (id, url, region, latitude, longitude, capacity, weight, state, secret, reported_load, last_heartbeat_at,
                  kind, admin_url, admin_secret_source)
                VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14)
                ON CONFLICT (id) DO UPDATE SET url = EXCLUDED.url, region = EXCLUDED.region, latitude = EXCLUDED.latitude,
                  longitude = EXCLUDED.longitude, capacity = EXCLUDED.capacity, weight = EXCLUDED.weight, state = EXCLUDED.state,
                  secret = EXCLUDED.secret, reported_load = EXCLUDED.reported_load, last_heartbeat_at = EXCLUDED.last_heartbeat_at,
                  kind = EXCLUDED.kind, admin_url = EXCLUDED.admin_url, admin_secret_source = EXCLUDED.admin_secret_source
                """, binds)
        }
    }

    public func deleteSFU(_ id: SFUID) throws {
        var binds = PostgresBindings()
        binds.append(id.rawValue)
        try write { try $0.execute("DELETE FROM sfu WHERE id = $1", binds) }
    }

    public func replaceRegions(_ regions: RegionTable) throws {
        try write { connection in
            try connection.execute("DELETE FROM region")
            for region in regions.regions.values.sorted(by: { $0.code < $1.code }) {
                var binds = PostgresBindings()
                binds.append(region.code)
                binds.append(region.name)
                binds.append(region.kind)
                binds.append(region.point.latitude)
                binds.append(region.point.longitude)
                try connection.execute("INSERT INTO region (code, name, kind, latitude, longitude) VALUES ($1, $2, $3, $4, $5)", binds)
            }
        }
    }

    /// How many regions are stored (tests, operators).
    public func storedRegionCount() throws -> Int {
        try session.withConnection { connection in
            Int(try connection.query("SELECT count(*) FROM region").first?.decode(Int64.self) ?? 0)
        }
    }

    public func failover(down: SFUID, moves: [PlacementRecord], webhooks: [CallMutation]) throws {
        try CallMutation.validate(webhooks)
        let statements = try Self.statements(moves.map(CallMutation.savePlacement) + webhooks)
        var sfu = PostgresBindings()
        sfu.append(down.rawValue)
        try write { connection in
            try connection.execute("UPDATE sfu SET state = 'down' WHERE id = $1", sfu)
            for (sql, binds) in statements { try connection.execute(sql, binds) }
        }
    }

    private static func sfu(_ row: PostgresRow) -> SFURecord? {
        let r = row.makeRandomAccess()
        func value<T: PostgresDecodable>(_ column: String) -> T? {
            let cell = r[column]
            guard cell.bytes != nil else { return nil }
            return try? cell.decode(T.self)
        }
        guard let id = SFUID(value("id") ?? ""), let state = SFUNode.State(rawValue: value("state") ?? ""),
            let kind = SFUKind(rawValue: value("kind") ?? ""), let url: String = value("url"), let latitude: Double = value("latitude"),
            let longitude: Double = value("longitude"), let capacity: Int64 = value("capacity"), let weight: Double = value("weight"),
            let load: Int64 = value("reported_load")
        else { return nil }
        var janus: JanusAccess?
        if kind == .janus {
            // A Janus row without its admin access cannot be polled: skipped, like a row with a bad id.
            guard let adminURL: String = value("admin_url"), let text: String = value("admin_secret_source"), let source = SecretSource(stored: text)
            else { return nil }
            janus = JanusAccess(adminURL: adminURL, adminSecret: source)
        }
        let heartbeat: Date? = value("last_heartbeat_at")
        return SFURecord(
            id: id, url: url, region: value("region"), latitude: latitude, longitude: longitude, capacity: Int(capacity), weight: weight,
            state: state, secret: value("secret"), reportedLoad: Int(load), lastHeartbeatAt: PostgresTime.read(heartbeat), kind: kind, janus: janus)
    }
}
