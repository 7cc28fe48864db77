import Foundation
import GRDB
import SwitchboardCore

/// The webhook outbox, the endpoints' state and the push devices in SQLite (migration
/// `v10_webhooks`). Call batches write them (`StoredRow.rows(_:)`); every read here folds the
/// batch log first, so it sees every commit that returned before it.
extension SQLiteStore: WebhookStore {
    /// A delivery's columns and its message's, which share names, under their own.
    private static let deliveryWithMessage = """
        SELECT d.*, m.type AS message_type, m.created_at AS message_created_at, m.lane AS message_lane, m.seq AS message_seq,
          m.data AS message_data
        FROM webhook_delivery d CROSS JOIN webhook_message m ON m.id = d.message_id
        """

    public func pendingWebhooks() throws -> [PendingWebhook] {
        try fold()
        return try Self.storeErrors {
            try pool.read { db in
                // `status = 'pending'` as a literal, so that the partial index serves it.
                try Row.fetchAll(
                    db,
                    sql: Self.deliveryWithMessage + " WHERE d.status = 'pending' ORDER BY d.lane, d.seq, d.message_id, d.endpoint"
                ).compactMap(Self.pendingWebhook)
            }
        }
    }

    public func webhook(messageID: String, endpoint: String) throws -> PendingWebhook? {
        try fold()
        return try Self.storeErrors {
            try pool.read { db in
                try Row.fetchOne(
                    db, sql: Self.deliveryWithMessage + " WHERE d.message_id = ? AND d.endpoint = ?", arguments: [messageID, endpoint]
                ).flatMap(Self.pendingWebhook)
            }
        }
    }

    public func listDeliveries(_ query: WebhookDeliveryQuery) throws -> WebhookDeliveryPage {
        let after = try query.cursor.map(Self.decodeDeliveryCursor)
        let limit = query.limit.clamped(to: CallQuery.limits)
        try fold()
        return try Self.storeErrors {
            try pool.read { db in
                var clauses: [String] = []
                var arguments: StatementArguments = []
                if let status = query.status {
                    clauses.append("status = ?")
                    arguments += [status.rawValue]
                }
                if let endpoint = query.endpoint {
                    clauses.append("endpoint = ?")
                    arguments += [endpoint]
                }
                if let cid = query.cid {
                    clauses.append("lane = ?")
                    arguments += [cid.cid]
                }
                if let after {
                    // Compared as the stored text, so a page never repeats or skips a row at its edge.
                    clauses.append("(created_at, message_id, endpoint) < (?, ?, ?)")
                    arguments += [after.createdAt, after.messageID, after.endpoint]
                }
                let filter = clauses.isEmpty ? "" : "WHERE " + clauses.joined(separator: " AND ")
                // One row more than the page shows whether there is a next page.
                let rows = try Row.fetchAll(
                    db,
                    sql: "SELECT * FROM webhook_delivery \(filter) ORDER BY created_at DESC, message_id DESC, endpoint DESC LIMIT ?",
                    arguments: arguments + [limit + 1])
                let page = rows.prefix(limit)
                let next = rows.count > limit ? page.last.map(Self.deliveryCursor) : nil
                return WebhookDeliveryPage(deliveries: page.compactMap { Self.deliveryRecord($0) }, next: next)
            }
        }
    }

    public func pruneWebhooks(createdBefore cutoff: Date, limit: Int) throws -> Int {
        try Self.storeErrors {
            // Folded first, under the fold lock, so no batch still to fold names a row deleted here.
            try folding.withLock { () throws -> Int in
                if let log { try foldLocked(log) }
                return try pool.write { db in
                    let rows = try Row.fetchAll(
                        db,
                        sql: """
                            SELECT message_id, endpoint FROM webhook_delivery
                            WHERE created_at < ? AND status IN ('delivered', 'dead') ORDER BY created_at, message_id, endpoint LIMIT ?
                            """,
                        arguments: [StoredTime.text(cutoff), max(0, limit)])
                    var messages: [String] = []
                    for row in rows {
                        let message: String = row["message_id"]
                        let endpoint: String = row["endpoint"]
                        try db.execute(sql: "DELETE FROM webhook_delivery WHERE message_id = ? AND endpoint = ?", arguments: [message, endpoint])
                        if messages.last != message { messages.append(message) }
                    }
                    for message in messages {
                        try db.execute(
                            sql: "DELETE FROM webhook_message WHERE id = ?1 AND NOT EXISTS (SELECT 1 FROM webhook_delivery WHERE message_id = ?1)",
                            arguments: [message])
                    }
                    return rows.count
                }
            }
        }
    }

    public func webhookEndpointStates() throws -> [WebhookEndpointState] {
        try fold()
        return try Self.storeErrors {
            try pool.read { db in
                try Row.fetchAll(db, sql: "SELECT * FROM webhook_endpoint ORDER BY name").map { row in
                    WebhookEndpointState(
                        name: row["name"], secret: row["secret"], previousSecret: row["previous_secret"], previousUntil: row["previous_until"],
                        disabledAt: row["disabled_at"], configuredDigest: row["configured_digest"])
                }
            }
        }
    }

    public func devices(of user: UserID) throws -> [DeviceRecord] {
        try fold()
        return try Self.storeErrors {
            try pool.read { db in
                try Row.fetchAll(
                    db, sql: "SELECT * FROM device WHERE user_id = ? ORDER BY created_at, token, provider", arguments: [user.rawValue]
                ).compactMap(Self.deviceRecord)
            }
        }
    }

    // MARK: - Rows

    static func deviceRecord(_ row: Row) -> DeviceRecord? {
        guard let user = UserID(row["user_id"]), let provider = DeviceProvider(rawValue: row["provider"]) else { return nil }
        return DeviceRecord(userID: user, provider: provider, token: row["token"], createdAt: row["created_at"])
    }

    private static func deliveryRecord(_ row: Row) -> WebhookDelivery? {
        guard let type = WebhookEventType(rawValue: row["type"]), let status = WebhookDeliveryStatus(rawValue: row["status"]) else { return nil }
        return WebhookDelivery(
            messageID: row["message_id"], endpoint: row["endpoint"], type: type, lane: row["lane"], seq: row["seq"], createdAt: row["created_at"],
            status: status, attempts: row["attempts"], nextAttemptAt: row["next_attempt_at"], lastAttemptAt: row["last_attempt_at"],
            lastStatus: row["last_status"], lastError: row["last_error"])
    }

    private static func pendingWebhook(_ row: Row) -> PendingWebhook? {
        guard let delivery = deliveryRecord(row), let type = WebhookEventType(rawValue: row["message_type"]) else { return nil }
        let data: String? = row["message_data"]
        let message = WebhookMessage(
            id: row["message_id"], type: type, createdAt: row["message_created_at"], lane: row["message_lane"], seq: row["message_seq"],
            data: JSONValue.parse(text: data))
        return PendingWebhook(delivery: delivery, message: message)
    }

    // MARK: - Cursors

    /// The last delivery of a page: its stored `created_at` text, message id and endpoint.
    struct DeliveryCursor: Equatable {
        var createdAt: String
        var messageID: String
        var endpoint: String
    }

    /// Unpadded base64url of a JSON array, so that no separator can be confused with a name's text.
    private static func deliveryCursor(_ row: Row) -> String {
        let createdAt: String = row["created_at"]
        let messageID: String = row["message_id"]
        let endpoint: String = row["endpoint"]
        return OpaqueCursor.encode([createdAt, messageID, endpoint])
    }

    static func decodeDeliveryCursor(_ text: String) throws -> DeliveryCursor {
        let parts = try OpaqueCursor.decode(text, count: 3)
        guard Date.fromDatabaseValue(parts[0].databaseValue) != nil else { throw SwitchboardError(.invalidRequest, "invalid cursor") }
        return DeliveryCursor(createdAt: parts[0], messageID: parts[1], endpoint: parts[2])
    }
}
