import Foundation
import PostgresNIO
import SwitchboardCore

/// The webhook outbox, endpoint states and push devices on PostgreSQL (ADR 0011); call batches
/// write them (``PostgresStore/apply(_:)``).
extension PostgresStore: WebhookStore {
    private static let deliveryWithMessage = """
        SELECT d.*, m.type AS message_type, m.created_at AS message_created_at, m.lane AS message_lane, m.seq AS message_seq,
          m.data AS message_data
        FROM webhook_delivery d JOIN webhook_message m ON m.id = d.message_id
        """

    public func pendingWebhooks() throws -> [PendingWebhook] {
        try session.withConnection { connection in
            try connection.query(Self.deliveryWithMessage + " WHERE d.status = 'pending' ORDER BY d.lane, d.seq, d.message_id, d.endpoint")
                .compactMap(Rows.pending)
        }
    }

    public func webhook(messageID: String, endpoint: String) throws -> PendingWebhook? {
        var binds = PostgresBindings()
        binds.append(messageID)
        binds.append(endpoint)
        return try session.withConnection { connection in
            try connection.query(Self.deliveryWithMessage + " WHERE d.message_id = $1 AND d.endpoint = $2", binds).first.flatMap(Rows.pending)
        }
    }

    public func listDeliveries(_ query: WebhookDeliveryQuery) throws -> WebhookDeliveryPage {
        let after = try query.cursor.map(Self.decodeDeliveryCursor)
        let limit = query.limit.clamped(to: CallQuery.limits)
        var clauses: [String] = []
        var binds = PostgresBindings()
        if let status = query.status {
            binds.append(status.rawValue)
            clauses.append("status = $\(binds.count)")
        }
        if let endpoint = query.endpoint {
            binds.append(endpoint)
            clauses.append("endpoint = $\(binds.count)")
        }
        if let cid = query.cid {
            binds.append(cid.cid)
            clauses.append("lane = $\(binds.count)")
        }
        if let after {
            binds.append(PostgresTime.date(milliseconds: after.createdAt))
            binds.append(after.messageID)
            binds.append(after.endpoint)
            clauses.append("(created_at, message_id, endpoint) < ($\(binds.count - 2), $\(binds.count - 1), $\(binds.count))")
        }
        binds.append(Int64(limit + 1))
        let filter = clauses.isEmpty ? "" : "WHERE " + clauses.joined(separator: " AND ")
        let rows = try session.withConnection { connection in
            try connection.query(
                "SELECT * FROM webhook_delivery \(filter) ORDER BY created_at DESC, message_id DESC, endpoint DESC LIMIT $\(binds.count)", binds
            ).compactMap(Rows.delivery)
        }
        let page = Array(rows.prefix(limit))
        let next = rows.count > limit
            ? page.last.map { OpaqueCursor.encode(["\(PostgresTime.milliseconds($0.createdAt))", $0.messageID, $0.endpoint]) } : nil
        return WebhookDeliveryPage(deliveries: page, next: next)
    }

    public func webhookEndpointStates() throws -> [WebhookEndpointState] {
        try session.withConnection { connection in
            try connection.query("SELECT * FROM webhook_endpoint ORDER BY name").compactMap(Rows.endpoint)
        }
    }

    public func devices(of user: UserID) throws -> [DeviceRecord] {
        var binds = PostgresBindings()
        binds.append(user.rawValue)
        return try session.withConnection { connection in
            try connection.query("SELECT * FROM device WHERE user_id = $1 ORDER BY created_at, token, provider", binds).compactMap(Rows.device)
        }
    }

    public func pruneWebhooks(createdBefore cutoff: Date, limit: Int) throws -> Int {
        var binds = PostgresBindings()
        binds.append(PostgresTime.bind(cutoff))
        binds.append(Int64(max(0, limit)))
        return try write { connection in
            let deleted = try connection.query(
                """
                DELETE FROM webhook_delivery WHERE (message_id, endpoint) IN (
                  SELECT message_id, endpoint FROM webhook_delivery WHERE created_at < $1 AND status IN ('delivered', 'dead')
                  ORDER BY created_at, message_id, endpoint LIMIT $2)
                RETURNING message_id
                """, binds)
            let messages = Array(Set(try deleted.map { try $0.decode(String.self) }))
            if !messages.isEmpty {
                var orphans = PostgresBindings()
                orphans.append(messages)
                try connection.execute(
                    """
                    DELETE FROM webhook_message m WHERE m.id = ANY($1)
                      AND NOT EXISTS (SELECT 1 FROM webhook_delivery d WHERE d.message_id = m.id)
                    """, orphans)
            }
            return deleted.count
        }
    }

    /// A deliveries page's last row: its creation time in milliseconds, message and endpoint.
    struct DeliveryCursor {
        var createdAt: Int64
        var messageID: String
        var endpoint: String
    }

    static func decodeDeliveryCursor(_ text: String) throws(SwitchboardError) -> DeliveryCursor {
        let parts = try OpaqueCursor.decode(text, count: 3)
        guard let millis = Int64(parts[0]) else { throw SwitchboardError(.invalidRequest, "invalid cursor") }
        return DeliveryCursor(createdAt: millis, messageID: parts[1], endpoint: parts[2])
    }
}
