import GRDB

extension StoreMigrations {
    /// Migration `v10_webhooks`: the webhook outbox (a message and one delivery per subscribed
    /// endpoint, committed with the call change that raised it), the endpoints' rotated secrets
    /// and disabled state, users' push devices, and each call's webhook sequence (`event_seq`).
    /// Like the call tables, no foreign keys: a batch commits in any order.
    static func createWebhookTables(_ db: Database) throws {
        try db.execute(sql: """
            ALTER TABLE call ADD COLUMN event_seq INTEGER NOT NULL DEFAULT 0;

            CREATE TABLE webhook_message (
              id TEXT PRIMARY KEY NOT NULL, type TEXT NOT NULL, created_at DATETIME NOT NULL, lane TEXT NOT NULL,
              seq INTEGER NOT NULL, data TEXT NOT NULL);

            CREATE TABLE webhook_delivery (
              message_id TEXT NOT NULL, endpoint TEXT NOT NULL, type TEXT NOT NULL, lane TEXT NOT NULL, seq INTEGER NOT NULL,
              created_at DATETIME NOT NULL, status TEXT NOT NULL, attempts INTEGER NOT NULL, next_attempt_at DATETIME,
              last_attempt_at DATETIME, last_status INTEGER, last_error TEXT,
              PRIMARY KEY (message_id, endpoint)) WITHOUT ROWID;
            -- The delivery worker's start: what is pending, in lane order. Delivered and dead
            -- rows, nearly all of them, stay out of it.
            CREATE INDEX webhook_delivery_pending ON webhook_delivery(lane, seq, message_id, endpoint) WHERE status = 'pending';
            -- The admin list, newest first, keyed as its cursor is.
            CREATE INDEX webhook_delivery_on_created_at ON webhook_delivery(created_at, message_id, endpoint);

            CREATE TABLE webhook_endpoint (
              name TEXT PRIMARY KEY NOT NULL, secret TEXT, previous_secret TEXT, previous_until DATETIME, disabled_at DATETIME);

            CREATE TABLE device (
              provider TEXT NOT NULL, token TEXT NOT NULL, user_id TEXT NOT NULL, created_at DATETIME NOT NULL,
              PRIMARY KEY (provider, token));
            CREATE INDEX device_on_user_id_created_at ON device(user_id, created_at);
            """)
    }
}
