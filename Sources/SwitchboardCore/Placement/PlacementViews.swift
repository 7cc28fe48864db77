import Foundation

/// What an operator sends to create or replace an SFU.
public struct SFUDefinition: Sendable, Equatable, Codable {
    public var id: String?
    public var url: String
    public var region: String?
    public var latitude: Double?
    public var longitude: Double?
    public var capacity: Int
    public var weight: Double?
    /// Heartbeat SFUs only: the credential the SFU presents on heartbeats.
    public var secret: String?
    /// `heartbeat` (the default) or `janus`; validated with the rest of the definition.
    public var kind: String?
    /// Janus SFUs only: the admin API and where its secret is read from.
    public var janus: JanusDefinition?

    public init(
        id: String? = nil, url: String, region: String? = nil, latitude: Double? = nil, longitude: Double? = nil,
        capacity: Int, weight: Double? = nil, secret: String? = nil, kind: String? = nil, janus: JanusDefinition? = nil
    ) {
        self.kind = kind
        self.janus = janus
        self.id = id
        self.url = url
        self.region = region
        self.latitude = latitude
        self.longitude = longitude
        self.capacity = capacity
        self.weight = weight
        self.secret = secret
    }
}

/// An SFU as the admin API shows it (never its secret).
public struct SFUView: Sendable, Equatable, Codable {
    public var id: String
    public var url: String
    public var region: String?
    public var latitude: Double
    public var longitude: Double
    public var capacity: Int
    public var weight: Double
    public var state: String
    /// Load from the last heartbeat, and assignments made since.
    public var load: Int
    public var pending: Int
    /// Whether a heartbeat arrived within `stale_after`.
    public var fresh: Bool
    public var lastHeartbeatAt: Date?
    /// Calls placed on it.
    public var calls: Int
    public var hasSecret: Bool
    public var kind: String
    /// Where the load comes from: `heartbeat` (pushed by the SFU) or `poll` (pulled by Switchboard).
    public var loadSource: String
    /// Janus SFUs: the admin API and the secret's source (never the secret).
    public var janus: JanusView?
    /// Polled SFUs: when the last poll finished (wall clock) and how.
    public var lastPollAt: Date?
    public var lastPollOutcome: String?

    /// The `janus` object of an SFU view.
    public struct JanusView: Sendable, Equatable, Codable {
        public var adminUrl: String
        public var adminSecretFrom: String

        public init(adminUrl: String, adminSecretFrom: String) {
            self.adminUrl = adminUrl
            self.adminSecretFrom = adminSecretFrom
        }
    }

    public init(record: SFURecord, node: SFUNode?, fresh: Bool, calls: Int, lastPoll: SFUPollResult? = nil) {
        kind = record.kind.rawValue
        loadSource = record.kind == .heartbeat ? "heartbeat" : "poll"
        janus = record.janus.map { JanusView(adminUrl: $0.adminURL, adminSecretFrom: $0.adminSecret.description) }
        lastPollAt = lastPoll?.at
        lastPollOutcome = lastPoll?.outcome.rawValue
        id = record.id.rawValue
        url = record.url
        region = record.region
        latitude = record.latitude
        longitude = record.longitude
        capacity = record.capacity
        weight = record.weight
        state = (node?.state ?? record.state).rawValue
        load = node?.reportedLoad ?? record.reportedLoad
        pending = node?.pending ?? 0
        self.fresh = fresh
        lastHeartbeatAt = record.lastHeartbeatAt
        self.calls = calls
        hasSecret = record.secret != nil
    }
}

/// Why placement chose what it chose: the answer of `POST /v1/placement/explain`.
public struct PlacementExplanation: Sendable, Equatable, Codable {
    /// A participant's resolved location.
    public struct Participant: Sendable, Equatable, Codable {
        public var source: String
        public var latitude: Double
        public var longitude: Double
        public var measuredRtts: Int
    }

    /// One SFU's evaluation.
    public struct Candidate: Sendable, Equatable, Codable {
        public var sfu: String
        public var url: String
        public var region: String?
        public var worstDistanceKm: Double
        public var worstRttMs: Double
        public var load: Int
        public var capacity: Int
        public var utilization: Double
        /// The filter it failed, if any: draining, down, stale, full.
        public var rejected: String?
        public var score: Double?
    }

    public var callId: String?
    public var chosen: String?
    /// The SFU the call is on now, when explaining an existing call.
    public var current: String?
    public var participants: [Participant]
    public var candidates: [Candidate]

    public init(callID: String?, decision: PlacementDecision, current: SFUID?, participants: [ResolvedLocation]) {
        callId = callID
        chosen = decision.chosen?.rawValue
        self.current = current?.rawValue
        self.participants = participants.map {
            Participant(source: $0.source.rawValue, latitude: $0.point.latitude, longitude: $0.point.longitude, measuredRtts: $0.rtts.count)
        }
        candidates = decision.candidates.map {
            Candidate(
                sfu: $0.sfu.rawValue, url: $0.url, region: $0.region, worstDistanceKm: ($0.worstDistanceKilometers * 10).rounded() / 10,
                worstRttMs: ($0.worstRTT * 100).rounded() / 100, load: $0.load, capacity: $0.capacity,
                utilization: ($0.utilization * 1000).rounded() / 1000, rejected: $0.rejection?.rawValue, score: $0.score)
        }
    }
}

/// A call moved off a failed SFU (`to` is nil when no SFU could take it).
public struct Reassignment: Sendable, Equatable {
    public let callID: String
    public let from: SFUID
    public let to: SFUID?

    public init(callID: String, from: SFUID, to: SFUID?) {
        self.callID = callID
        self.from = from
        self.to = to
    }
}
