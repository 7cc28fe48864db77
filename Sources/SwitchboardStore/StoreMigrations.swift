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
        migrator.registerMigration("v6_calls") { db in try createCallTables(db) }
        migrator.registerMigration("v7_sfu_kinds") { db in
            try db.alter(table: "sfu") { table in
                table.add(column: "kind", .text).notNull().defaults(to: "heartbeat")
                // Janus SFUs: the admin API's URL and where its secret is read from (`env:NAME`
                // or `file:/path`); the secret itself is never stored.
                table.add(column: "admin_url", .text)
                table.add(column: "admin_secret_source", .text)
            }
            // A call placed on a Janus: its VideoRoom room there.
            try db.alter(table: "call_placement") { table in
                table.add(column: "room", .integer)
            }
        }
        migrator.registerMigration("v8_batch_log") { db in
            // The highest batch log segment whose batches are in the tables (ADR 0010).
            try db.execute(sql: "CREATE TABLE batch_log_state (id INTEGER PRIMARY KEY CHECK (id = 1), folded_through INTEGER NOT NULL)")
        }
        migrator.registerMigration("v9_call_number") { db in try keyCallRowsOnCallNumber(db) }
        migrator.registerMigration("v10_webhooks") { db in try createWebhookTables(db) }
        migrator.registerMigration("v11_webhook_configured_digest") { db in
            // What configured secret a rotation replaced (its digest), so that a later change of
            // the configuration wins over the rotated secret (WebhookEndpointState.reconciled).
            try db.execute(sql: "ALTER TABLE webhook_endpoint ADD COLUMN configured_digest TEXT")
        }
        return migrator
    }

    /// Calls, their members and ring states, participant sessions, the call event log and
    /// resumable client connections. No foreign keys: a batch commits in any order.
    private static func createCallTables(_ db: Database) throws {
        try db.create(table: "call") { table in
            table.primaryKey("cid", .text)
            table.column("type", .text).notNull()
            table.column("id", .text).notNull()
            table.column("created_by", .text).notNull()
            table.column("created_at", .datetime).notNull()
            table.column("session", .integer).notNull()
            table.column("ended_at", .datetime)
            table.column("ended_reason", .text)
            table.column("rung", .boolean).notNull()
            table.column("auto_cancel_at", .datetime)
            table.column("empty_deadline", .datetime)
            table.column("custom", .text).notNull()
        }
        try db.create(index: "call_on_ended_at", on: "call", columns: ["ended_at"])
        // History pages are keyed on (created_at, cid), newest first.
        try db.create(index: "call_on_created_at_cid", on: "call", columns: ["created_at", "cid"])
        try db.create(index: "call_on_type", on: "call", columns: ["type"])
        try db.create(table: "call_member") { table in
            table.column("cid", .text).notNull()
            table.column("user_id", .text).notNull()
            table.column("added_at", .datetime).notNull()
            table.column("ring_state", .text).notNull()
            table.column("ring_reason", .text)
            table.column("ring_updated_at", .datetime)
            table.column("ring_deadline", .datetime)
            table.primaryKey(["cid", "user_id"])
        }
        try db.create(index: "call_member_on_user_id", on: "call_member", columns: ["user_id"])
        try createCallSessionTable(db)
        try db.create(table: "call_event") { table in
            table.autoIncrementedPrimaryKey("seq")
            table.column("cid", .text).notNull()
            table.column("call_session", .integer).notNull()
            table.column("at", .datetime).notNull()
            table.column("type", .text).notNull()
            table.column("payload", .text).notNull()
        }
        try db.create(index: "call_event_on_cid_seq", on: "call_event", columns: ["cid", "seq"])
        try db.create(table: "client_connection") { table in
            table.primaryKey("id", .text)
            table.column("user_id", .text).notNull()
            table.column("resume_token", .text).notNull()
            table.column("connected_at", .datetime).notNull()
            table.column("token_expires_at", .datetime).notNull()
            table.column("detached_at", .datetime)
        }
    }

    private static func createCallSessionTable(_ db: Database) throws {
        try db.create(table: "call_session") { table in
            table.primaryKey("session_id", .text)
            table.column("cid", .text).notNull()
            table.column("call_session", .integer).notNull()
            table.column("user_id", .text).notNull()
            table.column("connection_id", .text).notNull()
            table.column("role", .text).notNull()
            table.column("joined_at", .datetime).notNull()
            table.column("left_at", .datetime)
            table.column("left_reason", .text)
            table.column("location", .text)
            table.column("media", .text).notNull()
        }
        try db.create(index: "call_session_on_cid_joined_at", on: "call_session", columns: ["cid", "joined_at"])
        // Start-up loads the sessions that have not left: a partial index keeps that read small.
        try db.execute(sql: "CREATE INDEX call_session_active ON call_session(joined_at) WHERE left_at IS NULL")
    }

    /// Every migration identifier, oldest first.
    static var all: [String] { migrator.migrations }

    /// The migrations recorded in `db`, oldest first: this build's in the order they were
    /// registered (`v10_…` sorts before `v1_…` as text), then any a newer build recorded, by name.
    static func applied(_ db: Database) throws -> [String] {
        let recorded = try migrator.appliedIdentifiers(db)
        let known = all
        return known.filter(recorded.contains) + recorded.subtracting(known).sorted()
    }
}

extension SQLiteStore {
    /// Applies this build's migrations up to and including `target` to any GRDB writer, so that
    /// tests can build a database at an older schema with the real released migrations.
    public static func migrate(_ writer: some DatabaseWriter, upTo target: String) throws {
        try StoreMigrations.migrator.migrate(writer, upTo: target)
    }
}
