import Foundation
import GRDB
import SwitchboardCore

/// One call mutation as the statement that applies it and that statement's arguments, already
/// in their stored form (dates as text, JSON as text). It is what a batch log record holds
/// (``BatchCodec``) and what a fold executes, so a mutation is turned into SQL values once, on
/// the committing thread, and the two write paths cannot disagree on a column.
struct StoredRow: Sendable, Equatable {
    /// The kind byte of a batch log record's row: logs on disk use these numbers, so a kind is
    /// only ever appended, never renumbered.
    enum Kind: UInt8, Sendable, CaseIterable {
        case call = 1, member, session, event, connection, deleteConnection, placement, deletePlacement
        // Migration `v10_webhooks`.
        case webhookMessage, webhookDelivery, webhookEndpoint, device, deleteDevice
    }

    var kind: Kind
    var values: [DatabaseValue]

    init(kind: Kind, values: [DatabaseValue]) {
        self.kind = kind
        self.values = values
    }

    private init(_ kind: Kind, _ values: [(any DatabaseValueConvertible)?]) {
        self.init(kind: kind, values: values.map { $0?.databaseValue ?? .null })
    }

    /// The rows of a mutation: one, but for ``CallMutation/enqueueWebhook(_:endpoints:)``, which
    /// is its message's row and one delivery row per endpoint. Throws only for a value SQLite
    /// cannot hold (a non-finite number).
    static func rows(_ mutation: CallMutation) throws -> [StoredRow] {
        switch mutation {
        case .enqueueWebhook(let message, let endpoints):
            let messageRow = StoredRow(.webhookMessage, [
                message.id, message.type.rawValue, StoredTime.text(message.createdAt), message.lane, message.seq, message.data.text,
            ])
            return [messageRow] + endpoints.map { StoredRow(delivery: WebhookDelivery(message, endpoint: $0)) }
        default:
            return [try StoredRow(oneRowOf: mutation)]
        }
    }

    /// The row of a mutation that is one row (every one but ``CallMutation/enqueueWebhook(_:endpoints:)``,
    /// which is refused: see ``rows(_:)``).
    init(_ mutation: CallMutation) throws {
        let rows = try Self.rows(mutation)
        guard rows.count == 1 else {
            throw SwitchboardError(.internalError, "call store: a mutation of \(rows.count) rows taken as one")
        }
        self = rows[0]
    }

    private init(oneRowOf mutation: CallMutation) throws {
        switch mutation {
        case .saveCall(let call):
            self.init(.call, [
                call.cid.cid, call.cid.type, call.cid.id, call.createdBy.rawValue, StoredTime.text(call.createdAt), call.session,
                StoredTime.text(call.endedAt), call.endedReason?.rawValue, call.rung, StoredTime.text(call.autoCancelAt),
                StoredTime.text(call.emptyDeadline), call.custom.text, call.eventSeq,
            ])
        case .saveMember(let member):
            self.init(.member, [
                member.cid.cid, member.userID.rawValue, StoredTime.text(member.addedAt), member.ringState.rawValue,
                member.ringReason?.rawValue, StoredTime.text(member.ringUpdatedAt), StoredTime.text(member.ringDeadline),
            ])
        case .saveSession(let session):
            self.init(.session, [
                session.sessionID.rawValue, session.cid.cid, session.callSession, session.userID.rawValue,
                session.connection.rawValue, session.role.rawValue, StoredTime.text(session.joinedAt), StoredTime.text(session.leftAt),
                session.leftReason, try session.location.map(StoredJSON.location), try StoredJSON.media(session.media),
            ])
        case .appendEvent(let event):
            self.init(.event, [
                event.cid.cid, event.callSession, StoredTime.text(event.at), event.type, event.payload.text,
            ])
        case .saveConnection(let connection):
            self.init(.connection, [
                connection.id.rawValue, connection.userID.rawValue, connection.resumeToken, StoredTime.text(connection.connectedAt),
                StoredTime.text(connection.tokenExpiresAt), StoredTime.text(connection.detachedAt),
            ])
        case .deleteConnection(let id):
            self.init(.deleteConnection, [id.rawValue])
        case .savePlacement(let placement):
            self.init(.placement, [
                placement.callID, placement.sfu.rawValue, try StoredJSON.encoded(placement.locations),
                placement.sources.map(\.rawValue).joined(separator: ","), StoredTime.text(placement.assignedAt), placement.reason,
                placement.room.map { Int64(bitPattern: $0) },
            ])
        case .deletePlacement(let cid):
            self.init(.deletePlacement, [cid.cid])
        case .enqueueWebhook:
            preconditionFailure("an enqueued webhook is several rows: StoredRow.rows(_:)")
        case .saveWebhookDelivery(let delivery):
            self.init(delivery: delivery)
        case .saveWebhookEndpoint(let endpoint):
            self.init(.webhookEndpoint, [
                endpoint.name, endpoint.secret, endpoint.previousSecret, StoredTime.text(endpoint.previousUntil),
                StoredTime.text(endpoint.disabledAt), endpoint.configuredDigest,
            ])
        case .saveDevice(let device):
            self.init(.device, [device.provider.rawValue, device.token, device.userID.rawValue, StoredTime.text(device.createdAt)])
        case .deleteDevice(let key):
            self.init(.deleteDevice, [key.provider.rawValue, key.token])
        }
    }

    private init(delivery: WebhookDelivery) {
        self.init(.webhookDelivery, [
            delivery.messageID, delivery.endpoint, delivery.type.rawValue, delivery.lane, delivery.seq, StoredTime.text(delivery.createdAt),
            delivery.status.rawValue, delivery.attempts, StoredTime.text(delivery.nextAttemptAt), StoredTime.text(delivery.lastAttemptAt),
            delivery.lastStatus, delivery.lastError,
        ])
    }

    /// A row read back from a batch log record, which may have been written by an earlier
    /// version and is kept so, to run that version's statement (``sql``): a `.call` row of before
    /// migration `v10_webhooks` has no `event_seq` (12 values), a `.webhookEndpoint` row of
    /// before `v11_webhook_configured_digest` no `configured_digest` (5 values). `nil` when the
    /// kind never had `values.count` values.
    init?(decoding kind: Kind, values: [DatabaseValue]) {
        guard values.count == kind.arity || Kind.earlierStatement(kind, arity: values.count) != nil else { return nil }
        self.init(kind: kind, values: values)
    }

    /// The row's statement: its kind's, but for a row an earlier version wrote to the batch log,
    /// which runs that version's statement. Such a row leaves alone the column it does not know
    /// (a new row gets the column's default), and it folds whether or not the file is migrated
    /// yet: `switchboard migrate` opens the store, and so folds the log, before it migrates.
    var sql: String {
        values.count == kind.arity ? kind.sql : Kind.earlierStatement(kind, arity: values.count) ?? kind.sql
    }

    /// Runs the rows' statements in order, numbering each call (`call_key`) before the first row
    /// that names it; a cid is numbered once per run of rows, however many rows name it.
    static func execute(_ rows: some Sequence<StoredRow>, in db: Database) throws {
        // Compared as bytes, as SQLite compares them (cids are ASCII today; see `key`).
        var numbered: Set<[UInt8]> = []
        for row in rows {
            if let cid = row.callKeyCID, numbered.insert(Array(cid.utf8)).inserted {
                try db.cachedStatement(sql: "INSERT INTO call_key (cid) VALUES (?) ON CONFLICT DO NOTHING").execute(arguments: [cid])
            }
            try db.cachedStatement(sql: row.sql).execute(arguments: StatementArguments(row.values))
        }
    }

    /// The cid whose number (`call_key`, migration `v9_call_number`) the row's statement reads:
    /// the call's rows, not its placement (keyed on the cid text) nor connections.
    private var callKeyCID: String? {
        switch kind {
        case .call, .member, .event: values.first.flatMap(String.fromDatabaseValue)
        case .session: String.fromDatabaseValue(values[1])
        case .connection, .deleteConnection, .placement, .deletePlacement, .webhookMessage, .webhookDelivery, .webhookEndpoint, .device,
            .deleteDevice:
            nil
        }
    }

    /// Rows that a later row of the same key replaces whole share this key; events have none
    /// (each is appended), nor do webhook messages (inserted once: a later row of the same id
    /// changes nothing, in a fold as in the table). Saves and deletes of one connection (placement,
    /// device) share a key; a delivery is keyed by message and endpoint. Keys are bytes, compared
    /// as SQLite compares the key columns: byte for byte (two spellings of "Å" are two calls), not
    /// as Swift compares strings.
    var key: [UInt8]? {
        let name: UInt8
        var columns = 1
        switch kind {
        case .event, .webhookMessage: return nil
        case .call: name = 1
        case .member: (name, columns) = (2, 2)
        case .session: name = 3
        case .connection, .deleteConnection: name = 4
        case .placement, .deletePlacement: name = 5
        case .webhookDelivery: (name, columns) = (6, 2)
        case .webhookEndpoint: name = 7
        case .device, .deleteDevice: (name, columns) = (8, 2)
        }
        var key: [UInt8] = [name]
        for value in values.prefix(columns) {
            key.append(0)
            if case .string(let text) = value.storage { key.append(contentsOf: text.utf8) }
        }
        return key
    }

    /// The cid of the call this row belongs to; `nil` for connections, webhooks and devices
    /// (their reads fold first whatever changed).
    var callCID: String? {
        switch kind {
        case .connection, .deleteConnection, .webhookMessage, .webhookDelivery, .webhookEndpoint, .device, .deleteDevice: return nil
        case .call, .member, .session, .event, .placement, .deletePlacement: return values.first.flatMap(String.fromDatabaseValue)
        }
    }
}

extension StoredRow.Kind {
    /// The statement; saves are upserts that replace every column but the key.
    var sql: String {
        switch self {
        case .call:
            """
            INSERT INTO call (no, cid, type, id, created_by, created_at, session, ended_at, ended_reason, rung, auto_cancel_at,
              empty_deadline, custom, event_seq)
            VALUES ((SELECT no FROM call_key WHERE cid = ?1), ?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13)
            ON CONFLICT(no) DO UPDATE SET created_by = excluded.created_by, created_at = excluded.created_at,
              session = excluded.session, ended_at = excluded.ended_at, ended_reason = excluded.ended_reason,
              rung = excluded.rung, auto_cancel_at = excluded.auto_cancel_at, empty_deadline = excluded.empty_deadline,
              custom = excluded.custom, event_seq = excluded.event_seq
            """
        case .member:
            """
            INSERT INTO call_member (call_no, cid, user_id, added_at, ring_state, ring_reason, ring_updated_at, ring_deadline)
            VALUES ((SELECT no FROM call_key WHERE cid = ?1), ?1, ?2, ?3, ?4, ?5, ?6, ?7)
            ON CONFLICT(call_no, user_id) DO UPDATE SET added_at = excluded.added_at, ring_state = excluded.ring_state,
              ring_reason = excluded.ring_reason, ring_updated_at = excluded.ring_updated_at,
              ring_deadline = excluded.ring_deadline
            """
        case .session:
            """
            INSERT INTO call_session (session_id, cid, call_no, call_session, user_id, connection_id, role, joined_at, left_at,
              left_reason, location, media)
            VALUES (?1, ?2, (SELECT no FROM call_key WHERE cid = ?2), ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)
            ON CONFLICT(session_id) DO UPDATE SET cid = excluded.cid, call_no = excluded.call_no,
              call_session = excluded.call_session, user_id = excluded.user_id, connection_id = excluded.connection_id,
              role = excluded.role, joined_at = excluded.joined_at, left_at = excluded.left_at, left_reason = excluded.left_reason,
              location = excluded.location, media = excluded.media
            """
        case .event:
            """
            INSERT INTO call_event (cid, call_no, call_session, at, type, payload)
            VALUES (?1, (SELECT no FROM call_key WHERE cid = ?1), ?2, ?3, ?4, ?5)
            """
        case .connection:
            """
            INSERT INTO client_connection (id, user_id, resume_token, connected_at, token_expires_at, detached_at)
            VALUES (?, ?, ?, ?, ?, ?)
            ON CONFLICT(id) DO UPDATE SET user_id = excluded.user_id, resume_token = excluded.resume_token,
              connected_at = excluded.connected_at, token_expires_at = excluded.token_expires_at,
              detached_at = excluded.detached_at
            """
        case .deleteConnection:
            "DELETE FROM client_connection WHERE id = ?"
        case .placement:
            """
            INSERT INTO call_placement (call_id, sfu_id, locations, sources, assigned_at, reason, room) VALUES (?, ?, ?, ?, ?, ?, ?)
            ON CONFLICT(call_id) DO UPDATE SET sfu_id = excluded.sfu_id, locations = excluded.locations,
              sources = excluded.sources, assigned_at = excluded.assigned_at, reason = excluded.reason, room = excluded.room
            """
        case .deletePlacement:
            "DELETE FROM call_placement WHERE call_id = ?"
        case .webhookMessage:
            """
            INSERT INTO webhook_message (id, type, created_at, lane, seq, data) VALUES (?, ?, ?, ?, ?, ?)
            ON CONFLICT(id) DO NOTHING
            """
        case .webhookDelivery:
            """
            INSERT INTO webhook_delivery (message_id, endpoint, type, lane, seq, created_at, status, attempts, next_attempt_at,
              last_attempt_at, last_status, last_error)
            VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
            ON CONFLICT(message_id, endpoint) DO UPDATE SET type = excluded.type, lane = excluded.lane, seq = excluded.seq,
              created_at = excluded.created_at, status = excluded.status, attempts = excluded.attempts,
              next_attempt_at = excluded.next_attempt_at, last_attempt_at = excluded.last_attempt_at,
              last_status = excluded.last_status, last_error = excluded.last_error
            """
        case .webhookEndpoint:
            """
            INSERT INTO webhook_endpoint (name, secret, previous_secret, previous_until, disabled_at, configured_digest)
            VALUES (?, ?, ?, ?, ?, ?)
            ON CONFLICT(name) DO UPDATE SET secret = excluded.secret, previous_secret = excluded.previous_secret,
              previous_until = excluded.previous_until, disabled_at = excluded.disabled_at,
              configured_digest = excluded.configured_digest
            """
        case .device:
            """
            INSERT INTO device (provider, token, user_id, created_at) VALUES (?, ?, ?, ?)
            ON CONFLICT(provider, token) DO UPDATE SET user_id = excluded.user_id, created_at = excluded.created_at
            """
        case .deleteDevice:
            "DELETE FROM device WHERE provider = ? AND token = ?"
        }
    }

    /// How many values a row of this kind carries.
    var arity: Int {
        switch self {
        case .call: 13
        case .member: 7
        case .session: 11
        case .event: 5
        case .connection: 6
        case .deleteConnection, .deletePlacement: 1
        case .placement: 7
        case .webhookMessage: 6
        case .webhookDelivery: 12
        case .webhookEndpoint: 6
        case .device: 4
        case .deleteDevice: 2
        }
    }

    /// A `.call` row's values before migration `v10_webhooks` added `event_seq`.
    static let callArityBeforeEventSeq = 12
    /// A `.webhookEndpoint` row's values before `v11_webhook_configured_digest`.
    static let endpointArityBeforeDigest = 5

    /// The statement of an earlier version's row of `kind` with `arity` values; `nil` when no
    /// version wrote such a row.
    static func earlierStatement(_ kind: StoredRow.Kind, arity: Int) -> String? {
        switch (kind, arity) {
        case (.call, callArityBeforeEventSeq): callStatementBeforeEventSeq
        case (.webhookEndpoint, endpointArityBeforeDigest): endpointStatementBeforeDigest
        default: nil
        }
    }

    /// The `.webhookEndpoint` statement before `v11_webhook_configured_digest`.
    static let endpointStatementBeforeDigest = """
        INSERT INTO webhook_endpoint (name, secret, previous_secret, previous_until, disabled_at) VALUES (?, ?, ?, ?, ?)
        ON CONFLICT(name) DO UPDATE SET secret = excluded.secret, previous_secret = excluded.previous_secret,
          previous_until = excluded.previous_until, disabled_at = excluded.disabled_at
        """

    /// The `.call` statement before migration `v10_webhooks`, for such rows.
    static let callStatementBeforeEventSeq = """
        INSERT INTO call (no, cid, type, id, created_by, created_at, session, ended_at, ended_reason, rung, auto_cancel_at,
          empty_deadline, custom)
        VALUES ((SELECT no FROM call_key WHERE cid = ?1), ?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12)
        ON CONFLICT(no) DO UPDATE SET created_by = excluded.created_by, created_at = excluded.created_at,
          session = excluded.session, ended_at = excluded.ended_at, ended_reason = excluded.ended_reason,
          rung = excluded.rung, auto_cancel_at = excluded.auto_cancel_at, empty_deadline = excluded.empty_deadline,
          custom = excluded.custom
        """
}

extension StoredRow {
    /// The rows of a run of batches with each key's last row only, in the order keys first
    /// appeared, events all kept in order. Applying the result leaves the tables as applying
    /// every row in turn would: every save replaces its whole row and nothing refers across
    /// tables (no foreign keys), so only the last row of a key matters.
    static func coalesced(_ batches: some Sequence<[StoredRow]>) -> [StoredRow] {
        var rows: [StoredRow] = []
        var position: [[UInt8]: Int] = [:]
        for batch in batches {
            for row in batch {
                guard let key = row.key else {
                    rows.append(row)
                    continue
                }
                if let index = position[key] {
                    rows[index] = row
                } else {
                    position[key] = rows.count
                    rows.append(row)
                }
            }
        }
        return rows
    }
}
