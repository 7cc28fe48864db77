import Foundation

/// A delivery with the message it delivers: what the delivery worker sends.
public struct PendingWebhook: Sendable, Equatable {
    public var delivery: WebhookDelivery
    public var message: WebhookMessage

    public init(delivery: WebhookDelivery, message: WebhookMessage) {
        self.delivery = delivery
        self.message = message
    }
}

/// A filter for `GET /v1/webhooks/deliveries`: newest first.
public struct WebhookDeliveryQuery: Sendable, Equatable {
    public var status: WebhookDeliveryStatus?
    public var endpoint: String?
    /// Deliveries of this call's messages (the lane).
    public var cid: CallCID?
    public var limit: Int
    /// The `next` cursor of the previous page.
    public var cursor: String?

    public init(status: WebhookDeliveryStatus? = nil, endpoint: String? = nil, cid: CallCID? = nil, limit: Int = 100, cursor: String? = nil) {
        self.status = status
        self.endpoint = endpoint
        self.cid = cid
        self.limit = limit
        self.cursor = cursor
    }
}

/// One page of deliveries.
public struct WebhookDeliveryPage: Sendable, Equatable {
    public var deliveries: [WebhookDelivery]
    public var next: String?

    public init(deliveries: [WebhookDelivery], next: String?) {
        self.deliveries = deliveries
        self.next = next
    }
}

/// The reads of the webhook outbox and the push devices. Writes go through
/// ``CallStore/apply(_:)`` (``CallMutation/enqueueWebhook(_:endpoints:)`` and the rest), so an
/// outbox row is committed with the change that caused it.
public protocol WebhookStore: Sendable {
    /// Every pending delivery with its message, in lane order (`lane`, then `seq`), for the
    /// delivery worker at start.
    func pendingWebhooks() throws -> [PendingWebhook]
    /// One delivery with its message; `nil` when unknown.
    func webhook(messageID: String, endpoint: String) throws -> PendingWebhook?
    func listDeliveries(_ query: WebhookDeliveryQuery) throws -> WebhookDeliveryPage
    /// Endpoints whose secret was rotated or that were disabled.
    func webhookEndpointStates() throws -> [WebhookEndpointState]
    /// A user's push devices, oldest first.
    func devices(of user: UserID) throws -> [DeviceRecord]
    /// Deletes up to `limit` deliveries that are delivered or dead and were created before
    /// `cutoff`, oldest first, and the messages left with no delivery (`webhooks.retention_ms`).
    /// Pending deliveries are never deleted. Returns how many deliveries went.
    func pruneWebhooks(createdBefore cutoff: Date, limit: Int) throws -> Int
}

extension PendingWebhook {
    /// The deliveries a committed batch created: one per message and endpoint, in batch order.
    public static func created(by mutations: [CallMutation]) -> [PendingWebhook] {
        var created: [PendingWebhook] = []
        for case .enqueueWebhook(let message, let endpoints) in mutations {
            created += endpoints.map { PendingWebhook(delivery: WebhookDelivery(message, endpoint: $0), message: message) }
        }
        return created
    }
}
