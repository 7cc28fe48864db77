import Foundation
import SwitchboardCore

/// The in-memory twin's webhook outbox, endpoint state and push devices, read as the SQLite
/// store reads them (`SQLiteStore+Webhooks.swift`): the same orders, filters and cursor paging.
extension InMemoryCallStore: WebhookStore {
    public func pendingWebhooks() throws -> [PendingWebhook] {
        lock.withLock {
            deliveries.values.filter { $0.status == .pending }.sorted(by: Self.laneOrder).compactMap(withMessage)
        }
    }

    public func webhook(messageID: String, endpoint: String) throws -> PendingWebhook? {
        lock.withLock {
            deliveries[DeliveryKey(messageID: StoredText(messageID), endpoint: StoredText(endpoint))].flatMap(withMessage)
        }
    }

    public func listDeliveries(_ query: WebhookDeliveryQuery) throws -> WebhookDeliveryPage {
        let after = try query.cursor.map(Self.decodeDeliveryCursor)
        let limit = query.limit.clamped(to: CallQuery.limits)
        return lock.withLock {
            let matching = deliveries.values.filter { delivery in
                if let status = query.status, delivery.status != status { return false }
                if let endpoint = query.endpoint, StoredText(delivery.endpoint) != StoredText(endpoint) { return false }
                if let cid = query.cid, StoredText(delivery.lane) != StoredText(cid.cid) { return false }
                return true
            }.sorted(by: Self.newestFirst)
            let rest = after.map { after in matching.filter { Self.newestFirst(after, $0) } } ?? matching
            let page = Array(rest.prefix(limit))
            let next = rest.count > limit ? page.last.map(Self.deliveryCursor) : nil
            return WebhookDeliveryPage(deliveries: page, next: next)
        }
    }

    public func pruneWebhooks(createdBefore cutoff: Date, limit: Int) throws -> Int {
        try lock.withLock {
            try checkNotFailing()
            let cutoff = StoredValues.time(cutoff)
            let old = deliveries.filter { $0.value.status != .pending && $0.value.createdAt < cutoff }
                .sorted { ($0.value.createdAt, $0.key.messageID, $0.key.endpoint) < ($1.value.createdAt, $1.key.messageID, $1.key.endpoint) }
                .prefix(max(0, limit))
            for (key, _) in old { deliveries[key] = nil }
            let left = Set(deliveries.keys.map(\.messageID))
            for message in Set(old.map(\.key.messageID)) where !left.contains(message) { webhookMessages[message] = nil }
            return old.count
        }
    }

    public func webhookEndpointStates() throws -> [WebhookEndpointState] {
        lock.withLock { endpointStates.sorted { $0.key < $1.key }.map(\.value) }
    }

    public func devices(of user: UserID) throws -> [DeviceRecord] {
        lock.withLock {
            devices.values.filter { StoredText($0.userID.rawValue) == StoredText(user.rawValue) }.sorted(by: Self.deviceOrder)
        }
    }

    /// The delivery with its message; `nil` without one, as the SQLite store's join drops it.
    private func withMessage(_ delivery: WebhookDelivery) -> PendingWebhook? {
        webhookMessages[StoredText(delivery.messageID)].map { PendingWebhook(delivery: delivery, message: $0) }
    }

    // MARK: - Orders

    /// Lane, then place in the lane; a message's endpoints by name.
    private static func laneOrder(_ lhs: WebhookDelivery, _ rhs: WebhookDelivery) -> Bool {
        (StoredText(lhs.lane), lhs.seq, StoredText(lhs.messageID), StoredText(lhs.endpoint))
            < (StoredText(rhs.lane), rhs.seq, StoredText(rhs.messageID), StoredText(rhs.endpoint))
    }

    private static func newestFirst(_ lhs: WebhookDelivery, _ rhs: WebhookDelivery) -> Bool {
        (lhs.createdAt, StoredText(lhs.messageID), StoredText(lhs.endpoint)) > (rhs.createdAt, StoredText(rhs.messageID), StoredText(rhs.endpoint))
    }

    /// Oldest first; ties by token, then provider.
    static func deviceOrder(_ lhs: DeviceRecord, _ rhs: DeviceRecord) -> Bool {
        (lhs.createdAt, StoredText(lhs.token), StoredText(lhs.provider.rawValue))
            < (rhs.createdAt, StoredText(rhs.token), StoredText(rhs.provider.rawValue))
    }

    // MARK: - Cursors

    /// Unpadded base64url of a JSON array, as the SQLite store writes its delivery cursors (not
    /// interchangeable with them: the time is the `Date`'s interval, which reads back exactly).
    private static func deliveryCursor(_ delivery: WebhookDelivery) -> String {
        OpaqueCursor.encode(["\(delivery.createdAt.timeIntervalSinceReferenceDate)", delivery.messageID, delivery.endpoint])
    }

    /// A stand-in for the last delivery of the previous page, compared by (created_at, message id, endpoint) only.
    private static func decodeDeliveryCursor(_ text: String) throws -> WebhookDelivery {
        let parts = try OpaqueCursor.decode(text, count: 3)
        guard let seconds = Double(parts[0]), seconds.isFinite else { throw SwitchboardError(.invalidRequest, "invalid cursor") }
        return WebhookDelivery(
            messageID: parts[1], endpoint: parts[2], type: .callCreated, lane: "", seq: 0, createdAt: Date(timeIntervalSinceReferenceDate: seconds))
    }
}

/// A delivery's key: its message and endpoint, byte for byte.
struct DeliveryKey: Hashable {
    let messageID: StoredText
    let endpoint: StoredText

    init(messageID: StoredText, endpoint: StoredText) {
        self.messageID = messageID
        self.endpoint = endpoint
    }

    init(_ delivery: WebhookDelivery) {
        self.init(messageID: StoredText(delivery.messageID), endpoint: StoredText(delivery.endpoint))
    }
}

/// A device's key: provider and token, the token byte for byte.
struct StoredDeviceKey: Hashable {
    let provider: DeviceProvider
    let token: StoredText

    init(_ key: DeviceKey) {
        provider = key.provider
        token = StoredText(key.token)
    }
}
