import Foundation
import GRDB
import SwitchboardCore

extension SQLiteStore: AuditLog, StoreHealth {
    public func append(_ entry: AuditEntry) throws -> AuditEntry {
        try entry.validate()
        return try pool.write { db in
            try db.execute(
                sql: "INSERT INTO audit_log (at, actor, action, target, detail) VALUES (?, ?, ?, ?, ?)",
                arguments: [entry.at, entry.actor, entry.action, entry.target, entry.detail])
            var stored = entry
            stored.id = db.lastInsertedRowID
            return stored
        }
    }

    public func entries(limit: Int, before: Int64?) throws -> [AuditEntry] {
        try pool.read { db in
            let rows = try Row.fetchAll(
                db,
                sql: "SELECT id, at, actor, action, target, detail FROM audit_log WHERE id < ? ORDER BY id DESC LIMIT ?",
                arguments: [before ?? Int64.max, limit])
            return rows.map { row in
                AuditEntry(id: row["id"], at: row["at"], actor: row["actor"], action: row["action"], target: row["target"], detail: row["detail"])
            }
        }
    }

    public func isWritable() -> Bool {
        do {
            try pool.writeWithoutTransaction { db in
                try db.execute(sql: "BEGIN IMMEDIATE")
                try db.execute(sql: "ROLLBACK")
            }
            return true
        } catch {
            return false
        }
    }
}
