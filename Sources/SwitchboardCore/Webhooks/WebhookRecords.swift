import Foundation

/// The events a webhook endpoint may subscribe to (docs/webhooks.md has each one's schema).
public enum WebhookEventType: String, Sendable, Equatable, Hashable, CaseIterable, Codable {
    case callCreated = "call.created"
    case callRing = "call.ring"
    case callAccepted = "call.accepted"
    case callRejected = "call.rejected"
    case callMissed = "call.missed"
    case callEnded = "call.ended"
    case callSessionStarted = "call.session_started"
    case callSessionEnded = "call.session_ended"
    case participantJoined = "call.participant_joined"
    case participantLeft = "call.participant_left"
    case sfuDown = "sfu.down"
    case sfuCallMoved = "sfu.call_moved"

    /// The webhook a call's event log entry of type `logType` raises, if any: the log's own
    /// names, but for `call.sfu_changed`, which is `sfu.call_moved` to an operator.
    public init?(logType: String) {
        if logType == "call.sfu_changed" {
            self = .sfuCallMoved
        } else if let type = WebhookEventType(rawValue: logType), type != .sfuDown {
            self = type
        } else {
            return nil
        }
    }
}

/// One webhook message: what every subscribed endpoint receives, with one `webhook-id` across
/// endpoints and retries.
public struct WebhookMessage: Sendable, Equatable {
    /// `msg_` and a time-ordered id: the `webhook-id` header.
    public var id: String
    public var type: WebhookEventType
    public var createdAt: Date
    /// What orders deliveries: the call's cid, or `sfu:<id>` for an SFU's own events.
    public var lane: String
    /// The message's place in its lane: the call's event sequence (1, 2, …), or the creation
    /// time in milliseconds for an SFU's own events.
    public var seq: Int64
    /// The body's `data`: the call's cid and `seq` are in it.
    public var data: JSONValue

    public init(id: String, type: WebhookEventType, createdAt: Date, lane: String, seq: Int64, data: JSONValue) {
        self.id = id
        self.type = type
        self.createdAt = createdAt
        self.lane = lane
        self.seq = seq
        self.data = data
    }

    /// The request body: `{"created_at" (ms), "data", "type"}`, the same bytes on every attempt.
    /// Written directly, keys in the order a ``JSONValue`` object writes them (sorted), without
    /// building that object first: it is made on every attempt.
    public var body: [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(320)
        out.append(contentsOf: #"{"created_at":"#.utf8)
        JSONValue.number((createdAt.timeIntervalSince1970 * 1000).rounded()).write(to: &out)
        out.append(contentsOf: #","data":"#.utf8)
        data.write(to: &out)
        out.append(contentsOf: #","type":"#.utf8)
        JSONValue.string(type.rawValue).write(to: &out)
        out.append(UInt8(ascii: "}"))
        return out
    }
}

/// Where one message stands with one endpoint.
public enum WebhookDeliveryStatus: String, Sendable, Equatable, CaseIterable, Codable {
    /// Not delivered yet: waiting for its turn, its next attempt, or the endpoint's return.
    case pending
    /// The endpoint answered 2xx.
    case delivered
    /// Failed until the retry horizon passed; an admin may retry it.
    case dead
}

/// One message's delivery to one endpoint.
public struct WebhookDelivery: Sendable, Equatable {
    public var messageID: String
    public var endpoint: String
    public var type: WebhookEventType
    public var lane: String
    public var seq: Int64
    public var createdAt: Date
    public var status: WebhookDeliveryStatus
    public var attempts: Int
    /// While pending: not before this time.
    public var nextAttemptAt: Date?
    public var lastAttemptAt: Date?
    /// The last answer's HTTP status; `nil` when there was none (timeout, refused, closed).
    public var lastStatus: Int?
    public var lastError: String?

    public init(
        messageID: String, endpoint: String, type: WebhookEventType, lane: String, seq: Int64, createdAt: Date,
        status: WebhookDeliveryStatus = .pending, attempts: Int = 0, nextAttemptAt: Date? = nil, lastAttemptAt: Date? = nil,
        lastStatus: Int? = nil, lastError: String? = nil
    ) {
        self.messageID = messageID
        self.endpoint = endpoint
        self.type = type
        self.lane = lane
        self.seq = seq
        self.createdAt = createdAt
        self.status = status
        self.attempts = attempts
        self.nextAttemptAt = nextAttemptAt
        self.lastAttemptAt = lastAttemptAt
        self.lastStatus = lastStatus
        self.lastError = lastError
    }

    /// The first delivery of `message` to `endpoint`: pending, due at once.
    public init(_ message: WebhookMessage, endpoint: String) {
        self.init(
            messageID: message.id, endpoint: endpoint, type: message.type, lane: message.lane, seq: message.seq, createdAt: message.createdAt,
            nextAttemptAt: message.createdAt)
    }
}

/// An endpoint's state the admin API changes: a rotated secret, and whether a 410 disabled it.
public struct WebhookEndpointState: Sendable, Equatable {
    public var name: String
    /// The secret set by rotation (`whsec_…`); `nil` while the configured one is current.
    public var secret: String?
    /// The secret before the last rotation, still signing until ``previousUntil``.
    public var previousSecret: String?
    public var previousUntil: Date?
    /// When the endpoint answered 410 Gone; nothing is sent to it until it is enabled again.
    public var disabledAt: Date?
    /// The digest of the configured secret when ``secret`` was set by a rotation
    /// (``WebhookSignature/digest(ofConfiguredSecret:)``); `nil` for a rotation of a version
    /// that did not keep it.
    public var configuredDigest: String?

    public init(
        name: String, secret: String? = nil, previousSecret: String? = nil, previousUntil: Date? = nil, disabledAt: Date? = nil,
        configuredDigest: String? = nil
    ) {
        self.name = name
        self.secret = secret
        self.previousSecret = previousSecret
        self.previousUntil = previousUntil
        self.disabledAt = disabledAt
        self.configuredDigest = configuredDigest
    }

    /// The state to keep at a start whose configured secret is `configured`: `nil` when this
    /// one stands. When the configured secret changed since the last rotation, the operator's
    /// change wins: the rotated secret and the previous one are dropped, and the configured
    /// secret alone signs. A rotation of a version that kept no digest stands (which secret
    /// the operator meant is unknown; the rotated one has been signing since).
    public func reconciled(withConfiguredSecret configured: String) -> WebhookEndpointState? {
        guard secret != nil, let configuredDigest, configuredDigest != WebhookSignature.digest(ofConfiguredSecret: configured) else { return nil }
        return WebhookEndpointState(name: name, disabledAt: disabledAt)
    }
}

/// Which endpoints take which events: the part of the webhook configuration the core needs to
/// write the outbox.
public struct WebhookRouting: Sendable, Equatable {
    /// Endpoint names and the events each takes, in configuration order.
    public var endpoints: [(name: String, events: Set<WebhookEventType>)]

    public init(endpoints: [(name: String, events: Set<WebhookEventType>)] = []) {
        self.endpoints = endpoints
    }

    public static func == (lhs: Self, rhs: Self) -> Bool {
        lhs.endpoints.map(\.name) == rhs.endpoints.map(\.name) && lhs.endpoints.map(\.events) == rhs.endpoints.map(\.events)
    }

    /// No endpoint at all: the outbox is never written.
    public var isEmpty: Bool { endpoints.isEmpty }

    /// The endpoints subscribed to `type`, in configuration order.
    public func endpoints(for type: WebhookEventType) -> [String] {
        endpoints.filter { $0.events.contains(type) }.map(\.name)
    }
}
