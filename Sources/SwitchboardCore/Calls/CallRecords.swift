import Foundation

/// A call as stored: one row per `(type, id)`, reopened in place by a later join.
public struct CallRecord: Sendable, Equatable {
    public var cid: CallCID
    /// The user who created the call: its `initiator`.
    public var createdBy: UserID
    public var createdAt: Date
    /// Which session of the call this is: 1 at creation, +1 each time a join reopens it.
    public var session: Int
    public var endedAt: Date?
    public var endedReason: CallEndReason?
    /// Ringing has happened for this id; it never happens again.
    public var rung: Bool
    /// While a ring is live: when it is cancelled if nobody accepted.
    public var autoCancelAt: Date?
    /// While the call has no participants and nobody is ringing: when it ends as `empty`.
    public var emptyDeadline: Date?
    /// App data given at creation (`custom`).
    public var custom: JSONValue
    /// The `seq` of the call's last webhook message (0 before the first).
    public var eventSeq: Int64

    public init(
        cid: CallCID, createdBy: UserID, createdAt: Date, session: Int = 1, endedAt: Date? = nil, endedReason: CallEndReason? = nil,
        rung: Bool = false, autoCancelAt: Date? = nil, emptyDeadline: Date? = nil, custom: JSONValue = .object([:]), eventSeq: Int64 = 0
    ) {
        self.eventSeq = eventSeq
        self.cid = cid
        self.createdBy = createdBy
        self.createdAt = createdAt
        self.session = session
        self.endedAt = endedAt
        self.endedReason = endedReason
        self.rung = rung
        self.autoCancelAt = autoCancelAt
        self.emptyDeadline = emptyDeadline
        self.custom = custom
    }

    /// Not ended.
    public var isLive: Bool { endedAt == nil }
}

/// Why a call ended (`call.ended {reason}`).
public enum CallEndReason: String, Sendable, Equatable, CaseIterable, Codable {
    case endedByUser = "ended_by_user"
    case initiatorLeft = "initiator_left"
    case allRejected = "all_rejected"
    case noAnswer = "no_answer"
    case cancelled
    case empty
    case admin
}

/// Where a member stands in the call's ring.
public enum RingState: String, Sendable, Equatable, CaseIterable, Codable {
    /// Never rung (the initiator, members of a call that did not ring, invitees).
    case none
    case ringing
    case accepted
    case rejected
    /// Did not answer within the incoming timeout (or the call stopped ringing first).
    case missed
}

/// Why a ringing member was rejected.
public enum RejectReason: String, Sendable, Equatable, CaseIterable, Codable {
    case decline, busy, cancel, timeout
}

/// A member of a call and their ring state.
public struct MemberRecord: Sendable, Equatable {
    public var cid: CallCID
    public var userID: UserID
    public var addedAt: Date
    public var ringState: RingState
    /// For `rejected`: why.
    public var ringReason: RejectReason?
    /// When the ring state last changed.
    public var ringUpdatedAt: Date?
    /// While `ringing`: when the member becomes `missed`.
    public var ringDeadline: Date?

    public init(
        cid: CallCID, userID: UserID, addedAt: Date, ringState: RingState = .none, ringReason: RejectReason? = nil,
        ringUpdatedAt: Date? = nil, ringDeadline: Date? = nil
    ) {
        self.cid = cid
        self.userID = userID
        self.addedAt = addedAt
        self.ringState = ringState
        self.ringReason = ringReason
        self.ringUpdatedAt = ringUpdatedAt
        self.ringDeadline = ringDeadline
    }
}

/// A participant's published media and speaking state.
public struct MediaState: Sendable, Equatable, Codable {
    public var audio = false
    public var video = false
    public var screenshare = false
    public var speaking = false
    /// 0…1.
    public var audioLevel = 0.0
    public var pinned = false

    public init(audio: Bool = false, video: Bool = false, screenshare: Bool = false, speaking: Bool = false, audioLevel: Double = 0, pinned: Bool = false) {
        self.audio = audio
        self.video = video
        self.screenshare = screenshare
        self.speaking = speaking
        self.audioLevel = audioLevel
        self.pinned = pinned
    }

    enum CodingKeys: String, CodingKey {
        case audio, video, screenshare, speaking, pinned
        case audioLevel = "audio_level"
    }
}

/// A participant's role in a call.
public enum ParticipantRole: String, Sendable, Equatable, Codable {
    /// The call's creator.
    case initiator
    case participant
}

/// One participant session: joined, possibly left.
public struct SessionRecord: Sendable, Equatable {
    public var sessionID: SessionID
    public var cid: CallCID
    /// The call session (``CallRecord/session``) this join belongs to.
    public var callSession: Int
    public var userID: UserID
    public var connection: ClientConnectionID
    public var role: ParticipantRole
    public var joinedAt: Date
    public var leftAt: Date?
    public var leftReason: String?
    public var location: LocationHint?
    public var media: MediaState

    public init(
        sessionID: SessionID, cid: CallCID, callSession: Int, userID: UserID, connection: ClientConnectionID, role: ParticipantRole,
        joinedAt: Date, leftAt: Date? = nil, leftReason: String? = nil, location: LocationHint? = nil, media: MediaState = MediaState()
    ) {
        self.sessionID = sessionID
        self.cid = cid
        self.callSession = callSession
        self.userID = userID
        self.connection = connection
        self.role = role
        self.joinedAt = joinedAt
        self.leftAt = leftAt
        self.leftReason = leftReason
        self.location = location
        self.media = media
    }

    public var isActive: Bool { leftAt == nil }
}

/// One entry of a call's append-only event log.
public struct CallEventRecord: Sendable, Equatable {
    public var cid: CallCID
    public var callSession: Int
    public var at: Date
    /// The event's wire type (`call.created`, `call.ring`, `call.participant_joined`, …).
    public var type: String
    public var payload: JSONValue

    public init(cid: CallCID, callSession: Int, at: Date, type: String, payload: JSONValue) {
        self.cid = cid
        self.callSession = callSession
        self.at = at
        self.type = type
        self.payload = payload
    }
}

/// A client connection that may be resumed: its user, resume token and token expiry.
public struct ConnectionRecord: Sendable, Equatable {
    public var id: ClientConnectionID
    public var userID: UserID
    /// The secret a new socket presents to take this connection over.
    public var resumeToken: String
    public var connectedAt: Date
    public var tokenExpiresAt: Date
    /// When its socket went away; `nil` while attached.
    public var detachedAt: Date?
    /// On a store several daemons share, the node holding it (its writer: the store stamps it,
    /// ADR 0012); `nil` on a store of one daemon, or written before nodes were kept.
    public var node: String?

    public init(
        id: ClientConnectionID, userID: UserID, resumeToken: String, connectedAt: Date, tokenExpiresAt: Date, detachedAt: Date? = nil,
        node: String? = nil
    ) {
        self.id = id
        self.userID = userID
        self.resumeToken = resumeToken
        self.connectedAt = connectedAt
        self.tokenExpiresAt = tokenExpiresAt
        self.detachedAt = detachedAt
        self.node = node
    }
}

/// One change to durable call state. A batch of mutations is committed in one transaction
/// before any response or event that reports it is sent.
public enum CallMutation: Sendable, Equatable {
    case saveCall(CallRecord)
    case saveMember(MemberRecord)
    case saveSession(SessionRecord)
    case appendEvent(CallEventRecord)
    case saveConnection(ConnectionRecord)
    case deleteConnection(ClientConnectionID)
    /// The call's SFU (placement keyed by the call's cid).
    case savePlacement(PlacementRecord)
    /// The call ended: it has no SFU any more.
    case deletePlacement(CallCID)
    /// A webhook message for these endpoints (the outbox): one pending delivery each.
    case enqueueWebhook(WebhookMessage, endpoints: [String])
    /// A delivery attempt's outcome, or an admin's retry.
    case saveWebhookDelivery(WebhookDelivery)
    /// An endpoint's rotated secret or disabled state.
    case saveWebhookEndpoint(WebhookEndpointState)
    /// A push device registered (replacing any registration of the same token).
    case saveDevice(DeviceRecord)
    case deleteDevice(DeviceKey)
}
