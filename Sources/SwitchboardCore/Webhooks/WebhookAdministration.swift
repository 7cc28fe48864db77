import Foundation

/// A configured endpoint as the admin API shows it (never its secrets).
public struct WebhookEndpointView: Sendable, Equatable {
    public var name: String
    public var url: String
    public var events: [WebhookEventType]
    /// When a 410 disabled it; `nil` while enabled.
    public var disabledAt: Date?
    /// While a rotation's grace runs: until when the previous secret also signs.
    public var previousSecretUntil: Date?
    /// Its deliveries not yet delivered nor dead.
    public var pending: Int

    public init(name: String, url: String, events: [WebhookEventType], disabledAt: Date?, previousSecretUntil: Date?, pending: Int) {
        self.name = name
        self.url = url
        self.events = events
        self.disabledAt = disabledAt
        self.previousSecretUntil = previousSecretUntil
        self.pending = pending
    }

    public var json: JSONValue {
        .object([
            "name": .string(name), "url": .string(url), "events": .array(events.map { .string($0.rawValue) }),
            "disabled_at": disabledAt.map(JSONValue.time) ?? .null, "previous_secret_until": previousSecretUntil.map(JSONValue.time) ?? .null,
            "pending": .number(Double(pending)),
        ])
    }
}

/// The admin API's port onto webhooks and push devices.
public protocol WebhookAdministration: Sendable {
    func endpoints() -> [WebhookEndpointView]
    func listDeliveries(_ query: WebhookDeliveryQuery) throws(SwitchboardError) -> WebhookDeliveryPage
    /// Sends a dead-lettered delivery again (`conflict` unless it is dead).
    func retry(messageID: String, endpoint: String) throws(SwitchboardError) -> WebhookDelivery
    /// A new secret for `endpoint`; the previous one keeps signing for `grace` (the configured
    /// grace when `nil`). Returns the new secret, shown once.
    func rotateSecret(endpoint: String, grace: Duration?) throws(SwitchboardError) -> (secret: String, previousUntil: Date)
    /// Sends to an endpoint a 410 disabled again.
    func enable(endpoint: String) throws(SwitchboardError)
    /// A user's push devices, oldest first.
    func devices(of user: UserID) throws(SwitchboardError) -> [DeviceRecord]
    /// Removes a device of `user` by its ``DeviceKey/id``; `false` when the user has none such.
    func deleteDevice(of user: UserID, id: String) throws(SwitchboardError) -> Bool
}

extension WebhookDelivery {
    /// A delivery as the admin API lists it.
    public var json: JSONValue {
        .object([
            "message_id": .string(messageID), "endpoint": .string(endpoint), "type": .string(type.rawValue), "lane": .string(lane),
            "seq": .number(Double(seq)), "created_at": .time(createdAt), "status": .string(status.rawValue), "attempts": .number(Double(attempts)),
            "next_attempt_at": nextAttemptAt.map(JSONValue.time) ?? .null, "last_attempt_at": lastAttemptAt.map(JSONValue.time) ?? .null,
            "last_status": lastStatus.map { .number(Double($0)) } ?? .null, "last_error": .optional(lastError),
        ])
    }
}
