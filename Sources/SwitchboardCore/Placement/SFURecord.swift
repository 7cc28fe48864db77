import Foundation

/// An SFU as operators define it and the store keeps it: the durable part of ``SFUNode``.
public struct SFURecord: Sendable, Equatable, Codable {
    public var id: SFUID
    public var url: String
    public var region: String?
    public var latitude: Double
    public var longitude: Double
    public var capacity: Int
    public var weight: Double
    public var state: SFUNode.State
    /// Credential the SFU presents on heartbeats (`Authorization: Bearer …`); never returned.
    public var secret: String?
    /// Last reported (or polled) load and when (wall clock), for operators.
    public var reportedLoad: Int
    public var lastHeartbeatAt: Date?
    public var kind: SFUKind
    /// Janus SFUs: how to reach the admin API (the secret's source, not the secret).
    public var janus: JanusAccess?

    public init(
        id: SFUID, url: String, region: String?, latitude: Double, longitude: Double, capacity: Int, weight: Double = 1,
        state: SFUNode.State = .active, secret: String? = nil, reportedLoad: Int = 0, lastHeartbeatAt: Date? = nil,
        kind: SFUKind = .heartbeat, janus: JanusAccess? = nil
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
        self.state = state
        self.secret = secret
        self.reportedLoad = reportedLoad
        self.lastHeartbeatAt = lastHeartbeatAt
    }

    /// The point, if the stored coordinates are valid.
    public var location: GeoPoint? { GeoPoint(latitude: latitude, longitude: longitude) }
}

/// A call's SFU: durable so a restart keeps calls where they are.
public struct PlacementRecord: Sendable, Equatable, Codable {
    /// The call (`type:id`), an opaque string to placement.
    public var callID: String
    public var sfu: SFUID
    /// The participants' hints the placement used (re-used when the call must move).
    public var locations: [LocationHint]
    /// Which source located each participant (`rtt`, `coordinates`, `region`, `ip`, `default`).
    public var sources: [LocationSource]
    public var assignedAt: Date
    /// Why it is on this SFU: `placed` or `failover`.
    public var reason: String
    /// On SFUs with rooms (Janus): the call's room there (derived from the call, the SFU and the
    /// daemon's key; kept so the store says which room a call holds).
    public var room: UInt64?

    public init(
        callID: String, sfu: SFUID, locations: [LocationHint], sources: [LocationSource] = [], assignedAt: Date, reason: String,
        room: UInt64? = nil
    ) {
        self.room = room
        self.callID = callID
        self.sfu = sfu
        self.locations = locations
        self.sources = sources
        self.assignedAt = assignedAt
        self.reason = reason
    }
}

/// The store port for the location table and call placements. Every method commits before
/// returning. A placement is made or dropped only by a call batch (``CallMutation``), in the
/// batch's one transaction; this port reads placements and moves them on failover.
public protocol SFUStore: Sendable {
    func allSFUs() throws -> [SFURecord]
    func saveSFU(_ record: SFURecord) throws
    func deleteSFU(_ id: SFUID) throws
    func allPlacements() throws -> [PlacementRecord]
    /// Replaces the stored region table with `regions`, in one transaction.
    func replaceRegions(_ regions: RegionTable) throws
    /// Marks `down` as down and moves every given placement, with `webhooks` (the `sfu.down`
    /// outbox row, ``CallMutation/enqueueWebhook(_:endpoints:)``), in one transaction.
    func failover(down: SFUID, moves: [PlacementRecord], webhooks: [CallMutation]) throws
}
