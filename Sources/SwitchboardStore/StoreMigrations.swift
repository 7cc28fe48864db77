import GRDB

/// The schema's history. Released migrations are never edited: change the schema by appending.
enum StoreMigrations {
    static var migrator: DatabaseMigrator {
        var migrator = DatabaseMigrator()
        migrator.registerMigration("v1_audit_log") { db in
            try db.create(table: "audit_log") { table in
                table.autoIncrementedPrimaryKey("id")
                table.column("at", .datetime).notNull()
                table.column("actor", .text).notNull()
                table.column("action", .text).notNull()
                table.column("target", .text).notNull().defaults(to: "")
                table.column("detail", .text).notNull().defaults(to: "")
            }
        }
        migrator.registerMigration("v2_audit_log_action_index") { db in
            try db.create(index: "audit_log_on_action_at", on: "audit_log", columns: ["action", "at"])
        }
        migrator.registerMigration("v3_sfus_and_placements") { db in
            try db.create(table: "sfu") { table in
                table.primaryKey("id", .text)
                table.column("url", .text).notNull()
                table.column("region", .text)
                table.column("latitude", .double).notNull()
                table.column("longitude", .double).notNull()
                table.column("capacity", .integer).notNull()
                table.column("weight", .double).notNull().defaults(to: 1)
                table.column("state", .text).notNull()
                table.column("secret", .text)
                table.column("reported_load", .integer).notNull().defaults(to: 0)
                table.column("last_heartbeat_at", .datetime)
            }
            try db.create(table: "call_placement") { table in
                table.primaryKey("call_id", .text)
                table.column("sfu_id", .text).notNull().indexed()
                table.column("locations", .text).notNull()
                table.column("assigned_at", .datetime).notNull()
                table.column("reason", .text).notNull()
            }
        }
        migrator.registerMigration("v4_region") { db in
            try db.create(table: "region") { table in
                table.primaryKey("code", .text)
                table.column("name", .text).notNull()
                table.column("kind", .text).notNull()
                table.column("latitude", .double).notNull()
                table.column("longitude", .double).notNull()
            }
        }
        migrator.registerMigration("v5_placement_sources") { db in
            try db.alter(table: "call_placement") { table in
                table.add(column: "sources", .text).notNull().defaults(to: "")
            }
        }
        return migrator
    }

    /// Every migration identifier, oldest first.
    static var all: [String] { migrator.migrations }
}

extension SQLiteStore {
    /// Applies this build's migrations up to and including `target` to any GRDB writer, so that
    /// tests can build a database at an older schema with the real released migrations.
    public static func migrate(_ writer: some DatabaseWriter, upTo target: String) throws {
        try StoreMigrations.migrator.migrate(writer, upTo: target)
    }
}
