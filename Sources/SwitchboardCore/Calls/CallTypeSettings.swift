/// What a call type allows and how its calls ring and end. Call types come from config.
public struct CallTypeSettings: Sendable, Equatable {
    /// What to do when a callee is already in another active call.
    public enum BusyPolicy: String, Sendable, Equatable, CaseIterable {
        /// Reject them at once with reason `busy`.
        case reject
        /// Ring them anyway.
        case ring
    }

    /// The type's name (`default`, `ringing`).
    public var name: String
    /// Only members may join (the creator, members given at creation, invitees).
    public var membersOnly: Bool
    /// Ringing with `ring: true` is allowed for this type.
    public var ringing: Bool
    /// Largest number of participant sessions at once.
    public var maxParticipants: Int
    /// A callee who has not answered by then becomes `missed`.
    public var incomingTimeout: Duration
    /// If nobody accepted by then, the caller gets `call.missed` and the call ends (`no_answer`).
    public var autoCancelTimeout: Duration
    public var busyPolicy: BusyPolicy
    /// The call ends (`initiator_left`) when its creator's last session leaves.
    public var endWhenInitiatorLeaves: Bool
    /// A call without participants (and nobody ringing) ends (`empty`) after this long.
    public var emptyTimeout: Duration
    /// A join may reopen an ended call as a new session of the same call.
    public var reopen: Bool

    public init(
        name: String, membersOnly: Bool, ringing: Bool, maxParticipants: Int, incomingTimeout: Duration,
        autoCancelTimeout: Duration, busyPolicy: BusyPolicy, endWhenInitiatorLeaves: Bool, emptyTimeout: Duration,
        reopen: Bool
    ) {
        self.name = name
        self.membersOnly = membersOnly
        self.ringing = ringing
        self.maxParticipants = maxParticipants
        self.incomingTimeout = incomingTimeout
        self.autoCancelTimeout = autoCancelTimeout
        self.busyPolicy = busyPolicy
        self.endWhenInitiatorLeaves = endWhenInitiatorLeaves
        self.emptyTimeout = emptyTimeout
        self.reopen = reopen
    }

    /// A meeting: anyone with a valid token may join; no ringing.
    public static let meeting = CallTypeSettings(
        name: "default", membersOnly: false, ringing: false, maxParticipants: 100, incomingTimeout: .seconds(30),
        autoCancelTimeout: .seconds(30), busyPolicy: .ring, endWhenInitiatorLeaves: false, emptyTimeout: .seconds(300),
        reopen: true)

    /// A ringing call: members only, rings on creation, ends when the initiator leaves.
    public static let ringingCall = CallTypeSettings(
        name: "ringing", membersOnly: true, ringing: true, maxParticipants: 10, incomingTimeout: .seconds(30),
        autoCancelTimeout: .seconds(30), busyPolicy: .reject, endWhenInitiatorLeaves: true, emptyTimeout: .seconds(60),
        reopen: true)
}

/// Everything the call layer needs to know from config.
public struct CallConfiguration: Sendable, Equatable {
    /// Call types by name.
    public var types: [String: CallTypeSettings]
    /// A socket has this long to send its `auth` frame.
    public var authTimeout: Duration
    /// `connection.token_expiring` goes out this long before the token expires.
    public var tokenExpiringLead: Duration
    /// A dropped connection's sessions wait this long for a resume.
    public var resumeWindow: Duration
    /// Events kept per connection for replay on resume.
    public var replayBuffer: Int
    /// A socket that sends nothing (not even `ping`) for this long is closed.
    public var idleTimeout: Duration
    /// Largest `custom` object, in bytes (call data and custom events).
    public var maxCustomBytes: Int
    /// Rings a user may receive per minute, and in a burst.
    public var ringRatePerMinute: Double
    public var ringBurst: Double
    /// Calls one user may create per minute, and in a burst.
    public var createsPerMinute: Double
    public var createBurst: Double
    /// Members one user may invite to existing calls per minute, and in a burst.
    public var invitesPerMinute: Double
    public var inviteBurst: Double
    /// How long a new loudest speaker must hold before it takes over from a still-speaking one.
    public var dominantSpeakerHold: Duration
    /// Largest number of members a call may have.
    public var maxMembers: Int
    /// Most connections one user may hold at once.
    public var connectionsPerUser: Int
    /// Requests one socket may send per second, and in a burst.
    public var messageRate: Double
    public var messageBurst: Double
    /// Failed authentications one remote address may make per minute, and in a burst.
    public var authFailuresPerMinute: Double
    public var authFailureBurst: Double
    /// Push devices one user may register (`device.register`).
    public var devicesPerUser: Int
    /// Which webhook endpoints take which events (empty: no outbox is written).
    public var webhooks: WebhookRouting

    public init(
        types: [String: CallTypeSettings] = ["default": .meeting, "ringing": .ringingCall], authTimeout: Duration = .seconds(5),
        tokenExpiringLead: Duration = .seconds(60), resumeWindow: Duration = .seconds(30), replayBuffer: Int = 256,
        idleTimeout: Duration = .seconds(60), maxCustomBytes: Int = 5120, ringRatePerMinute: Double = 20, ringBurst: Double = 10,
        dominantSpeakerHold: Duration = .milliseconds(1500), maxMembers: Int = 100, connectionsPerUser: Int = 16, messageRate: Double = 50,
        messageBurst: Double = 100, authFailuresPerMinute: Double = 30, authFailureBurst: Double = 10,
        createsPerMinute: Double = 60, createBurst: Double = 30, invitesPerMinute: Double = 120, inviteBurst: Double = 60,
        devicesPerUser: Int = 10, webhooks: WebhookRouting = WebhookRouting()
    ) {
        self.devicesPerUser = devicesPerUser
        self.webhooks = webhooks
        self.createsPerMinute = createsPerMinute
        self.createBurst = createBurst
        self.invitesPerMinute = invitesPerMinute
        self.inviteBurst = inviteBurst
        self.connectionsPerUser = connectionsPerUser
        self.messageRate = messageRate
        self.messageBurst = messageBurst
        self.authFailuresPerMinute = authFailuresPerMinute
        self.authFailureBurst = authFailureBurst
        self.types = types
        self.authTimeout = authTimeout
        self.tokenExpiringLead = tokenExpiringLead
        self.resumeWindow = resumeWindow
        self.replayBuffer = replayBuffer
        self.idleTimeout = idleTimeout
        self.maxCustomBytes = maxCustomBytes
        self.ringRatePerMinute = ringRatePerMinute
        self.ringBurst = ringBurst
        self.dominantSpeakerHold = dominantSpeakerHold
        self.maxMembers = maxMembers
    }
}
