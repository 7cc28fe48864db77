import Foundation
import PostgresNIO
import SwitchboardCore

/// The PostgreSQL schema's history, its own (not the SQLite store's): each migration a name and
/// its statements. Released migrations are never edited: change the schema by appending.
enum PostgresMigrations {
    static let all: [(name: String, statements: [String])] = [
        (
            "v1_audit_log",
            [
                """
                CREATE TABLE audit_log (
                  id BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY, at TIMESTAMPTZ NOT NULL, actor TEXT NOT NULL,
                  action TEXT NOT NULL, target TEXT NOT NULL DEFAULT '', detail TEXT NOT NULL DEFAULT '')
                """,
                "CREATE INDEX audit_log_on_action_at ON audit_log (action, at)",
            ]
        ),
        (
            // Calls, members and rings, sessions, the event log, resumable connections and
            // placements. Keys and names compare byte for byte (`COLLATE "C"`), as the SQLite
            // store's do, whatever the database's own collation. No foreign keys: a batch
            // commits in any order.
            "v2_calls",
            [
                """
                CREATE TABLE call (
                  cid TEXT COLLATE "C" PRIMARY KEY, type TEXT COLLATE "C" NOT NULL, id TEXT COLLATE "C" NOT NULL,
                  created_by TEXT COLLATE "C" NOT NULL, created_at TIMESTAMPTZ NOT NULL, session BIGINT NOT NULL, ended_at TIMESTAMPTZ,
                  ended_reason TEXT, rung BOOLEAN NOT NULL, auto_cancel_at TIMESTAMPTZ, empty_deadline TIMESTAMPTZ, custom TEXT NOT NULL,
                  event_seq BIGINT NOT NULL DEFAULT 0)
                """,
                "CREATE INDEX call_on_created_at_cid ON call (created_at, cid)",
                "CREATE INDEX call_live ON call (cid) WHERE ended_at IS NULL",
                "CREATE INDEX call_on_type ON call (type)",
                """
                CREATE TABLE call_member (
                  cid TEXT COLLATE "C" NOT NULL, user_id TEXT COLLATE "C" NOT NULL, added_at TIMESTAMPTZ NOT NULL, ring_state TEXT NOT NULL,
                  ring_reason TEXT, ring_updated_at TIMESTAMPTZ, ring_deadline TIMESTAMPTZ, PRIMARY KEY (cid, user_id))
                """,
                "CREATE INDEX call_member_on_user_id ON call_member (user_id)",
                """
                CREATE TABLE call_session (
                  session_id TEXT COLLATE "C" PRIMARY KEY, cid TEXT COLLATE "C" NOT NULL, call_session BIGINT NOT NULL,
                  user_id TEXT COLLATE "C" NOT NULL, connection_id TEXT COLLATE "C" NOT NULL, role TEXT NOT NULL, joined_at TIMESTAMPTZ NOT NULL,
                  left_at TIMESTAMPTZ, left_reason TEXT, location TEXT, media TEXT NOT NULL)
                """,
                "CREATE INDEX call_session_on_cid_joined_at ON call_session (cid, joined_at)",
                "CREATE INDEX call_session_active ON call_session (joined_at) WHERE left_at IS NULL",
                """
                CREATE TABLE call_event (
                  seq BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY, cid TEXT COLLATE "C" NOT NULL, call_session BIGINT NOT NULL,
                  at TIMESTAMPTZ NOT NULL, type TEXT COLLATE "C" NOT NULL, payload TEXT NOT NULL)
                """,
                "CREATE INDEX call_event_on_cid_seq ON call_event (cid, seq)",
                """
                CREATE TABLE client_connection (
                  id TEXT COLLATE "C" PRIMARY KEY, user_id TEXT COLLATE "C" NOT NULL, resume_token TEXT NOT NULL,
                  connected_at TIMESTAMPTZ NOT NULL, token_expires_at TIMESTAMPTZ NOT NULL, detached_at TIMESTAMPTZ)
                """,
                """
                CREATE TABLE call_placement (
                  call_id TEXT COLLATE "C" PRIMARY KEY, sfu_id TEXT COLLATE "C" NOT NULL, locations TEXT NOT NULL, sources TEXT NOT NULL,
                  assigned_at TIMESTAMPTZ NOT NULL, reason TEXT NOT NULL, room BIGINT)
                """,
            ]
        ),
        (
            // The webhook outbox (a message and one delivery per subscribed endpoint, committed
            // with the change that raised it), endpoint states and push devices (ADR 0011).
            "v3_webhooks",
            [
                """
                CREATE TABLE webhook_message (
                  id TEXT COLLATE "C" PRIMARY KEY, type TEXT NOT NULL, created_at TIMESTAMPTZ NOT NULL, lane TEXT COLLATE "C" NOT NULL,
                  seq BIGINT NOT NULL, data TEXT NOT NULL)
                """,
                """
                CREATE TABLE webhook_delivery (
                  message_id TEXT COLLATE "C" NOT NULL, endpoint TEXT COLLATE "C" NOT NULL, type TEXT NOT NULL, lane TEXT COLLATE "C" NOT NULL,
                  seq BIGINT NOT NULL, created_at TIMESTAMPTZ NOT NULL, status TEXT NOT NULL, attempts BIGINT NOT NULL,
                  next_attempt_at TIMESTAMPTZ, last_attempt_at TIMESTAMPTZ, last_status BIGINT, last_error TEXT,
                  PRIMARY KEY (message_id, endpoint))
                """,
                "CREATE INDEX webhook_delivery_pending ON webhook_delivery (lane, seq, message_id, endpoint) WHERE status = 'pending'",
                "CREATE INDEX webhook_delivery_on_created_at ON webhook_delivery (created_at, message_id, endpoint)",
                """
                CREATE TABLE webhook_endpoint (
                  name TEXT COLLATE "C" PRIMARY KEY, secret TEXT, previous_secret TEXT, previous_until TIMESTAMPTZ, disabled_at TIMESTAMPTZ,
                  configured_digest TEXT)
                """,
                """
                CREATE TABLE device (
                  provider TEXT COLLATE "C" NOT NULL, token TEXT COLLATE "C" NOT NULL, user_id TEXT COLLATE "C" NOT NULL,
                  created_at TIMESTAMPTZ NOT NULL, PRIMARY KEY (provider, token))
                """,
                "CREATE INDEX device_on_user_id_created_at ON device (user_id, created_at)",
            ]
        ),
        (
            // The SFU table (the daemon keeps its definitions and last reports; a Janus SFU's
            // admin secret is kept as where it comes from, never the secret) and the region table.
            "v4_sfus",
            [
                """
                CREATE TABLE sfu (
                  id TEXT COLLATE "C" PRIMARY KEY, url TEXT NOT NULL, region TEXT, latitude DOUBLE PRECISION NOT NULL,
                  longitude DOUBLE PRECISION NOT NULL, capacity BIGINT NOT NULL, weight DOUBLE PRECISION NOT NULL DEFAULT 1,
                  state TEXT NOT NULL, secret TEXT, reported_load BIGINT NOT NULL DEFAULT 0, last_heartbeat_at TIMESTAMPTZ,
                  kind TEXT NOT NULL DEFAULT 'heartbeat', admin_url TEXT, admin_secret_source TEXT)
                """,
                "CREATE INDEX call_placement_on_sfu_id ON call_placement (sfu_id)",
                """
                CREATE TABLE region (
                  code TEXT COLLATE "C" PRIMARY KEY, name TEXT NOT NULL, kind TEXT NOT NULL, latitude DOUBLE PRECISION NOT NULL,
                  longitude DOUBLE PRECISION NOT NULL)
                """,
            ]
        ),
        (
            // The daemons using the database, each with a lease renewed on the server's clock
            // (ADR 0012). Until calls are owned per node, one live node at a time.
            "v5_nodes",
            [
                """
                CREATE TABLE node (
                  id TEXT COLLATE "C" PRIMARY KEY, description TEXT NOT NULL, started_at TIMESTAMPTZ NOT NULL,
                  last_seen TIMESTAMPTZ NOT NULL, lease_until TIMESTAMPTZ NOT NULL)
                """,
            ]
        ),
        // Several daemons on one database: one leads (a lease with a generation that fences
        // its writes), the others stand by; secrets every node must share.
        (
            "v6_leader",
            [
                """
                CREATE TABLE leader (
                  id INTEGER PRIMARY KEY CHECK (id = 1), node TEXT COLLATE "C" NOT NULL, generation BIGINT NOT NULL,
                  lease_until TIMESTAMPTZ NOT NULL)
                """,
                """
                CREATE TABLE cluster_secret (
                  name TEXT COLLATE "C" PRIMARY KEY, value TEXT NOT NULL, created_at TIMESTAMPTZ NOT NULL DEFAULT now())
                """,
            ]
        ),
        // Messages between nodes too large for a NOTIFY payload, passed by reference (PostgresBus).
        (
            "v7_node_message",
            [
                """
                CREATE TABLE node_message (
                  id TEXT COLLATE "C" PRIMARY KEY, body TEXT NOT NULL, created_at TIMESTAMPTZ NOT NULL DEFAULT now())
                """,
            ]
        ),
        // Each node's open client sockets, written at each renewal (`GET /v1/nodes`).
        ("v8_node_sockets", ["ALTER TABLE node ADD COLUMN sockets INTEGER NOT NULL DEFAULT 0"]),
        // Which node runs each call (ADR 0012, step 3): held while the node's own lease runs,
        // the generation one more at each takeover; every write of a call checks it.
        (
            "v9_call_owner",
            [
                """
                CREATE TABLE call_owner (
                  cid TEXT COLLATE "C" PRIMARY KEY, node TEXT COLLATE "C" NOT NULL, generation BIGINT NOT NULL,
                  claimed_at TIMESTAMPTZ NOT NULL)
                """,
                "CREATE INDEX call_owner_on_node ON call_owner (node)",
            ]
        ),
        // Which node holds each client connection (ADR 0012, step 3): stamped by its writer;
        // NULL for rows written before (held by whichever daemon restores them).
        (
            "v10_connection_node",
            [
                #"ALTER TABLE client_connection ADD COLUMN node TEXT COLLATE "C""#,
                "CREATE INDEX client_connection_on_resume_token ON client_connection (resume_token)",
            ]
        ),
        // How each node runs calls (`store.postgres_calls`: leader or spread), for a starting
        // daemon to refuse a mode the live nodes do not run; NULL for rows written before.
        (
            "v11_node_calls",
            ["ALTER TABLE node ADD COLUMN calls TEXT"]
        ),
    ]

    /// The names of every migration this build knows, in order.
    static var names: [String] { all.map(\.name) }

    /// Any number of daemons may start at once against one database: each takes the same
    /// transaction-scoped advisory lock, so one migrates and the others then find it done.
    static let lockKey: Int64 = 0x5357_4254_4D49_4752  // "SWBTMIGR"

    /// Applies what is not applied yet, in one transaction; returns the names applied. Refuses a
    /// database a newer build migrated (a migration it does not know), naming it.
    static func migrate(_ session: PostgresSession) throws -> [String] {
        try session.transaction { connection in
            var lock = PostgresBindings()
            lock.append(lockKey)
            try connection.execute("SELECT pg_advisory_xact_lock($1)", lock)
            try connection.execute(
                "CREATE TABLE IF NOT EXISTS switchboard_migrations (name TEXT PRIMARY KEY, applied_at TIMESTAMPTZ NOT NULL DEFAULT now())")
            let applied = try appliedNames(connection)
            if let unknown = applied.first(where: { !names.contains($0) }) {
                throw SwitchboardError(
                    .invalidConfiguration, "the PostgreSQL database has migration \(unknown), which this build does not know: a newer build migrated it")
            }
            var done: [String] = []
            for migration in all where !applied.contains(migration.name) {
                for statement in migration.statements { try connection.execute(statement) }
                var name = PostgresBindings()
                name.append(migration.name)
                try connection.execute("INSERT INTO switchboard_migrations (name) VALUES ($1)", name)
                done.append(migration.name)
            }
            return done
        }
    }

    static func appliedNames(_ connection: PostgresSession.Connection) throws -> [String] {
        // Those applied together in their build's order: v10 after v9, not after v1.
        try connection.query(
            "SELECT name FROM switchboard_migrations ORDER BY applied_at, substring(name from '^v([0-9]+)_')::int NULLS LAST, name"
        ).map { row in
            try row.decode(String.self)
        }
    }
}
