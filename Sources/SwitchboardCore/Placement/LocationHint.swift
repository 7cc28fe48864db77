/// Where a client says it is, in any of the forms the placement engine understands.
public struct LocationHint: Sendable, Equatable, Codable {
    /// Round-trip times the client measured to SFUs, in milliseconds, keyed by SFU id.
    public var rtt: [String: Double]?
    public var latitude: Double?
    public var longitude: Double?
    /// A code from the region table (`fra`, `us-east-1`).
    public var region: String?
    /// The client's IP address (filled in by the server from the socket).
    public var ip: String?

    public init(rtt: [String: Double]? = nil, latitude: Double? = nil, longitude: Double? = nil, region: String? = nil, ip: String? = nil) {
        self.rtt = rtt
        self.latitude = latitude
        self.longitude = longitude
        self.region = region
        self.ip = ip
    }
}

/// Which piece of a ``LocationHint`` placement used.
public enum LocationSource: String, Sendable, Equatable, Codable, CaseIterable {
    case rtt, coordinates, region, ip
    case fallback = "default"
}

/// A client's location as placement uses it: measured RTTs where it has them, and a point
/// for every other SFU.
public struct ResolvedLocation: Sendable, Equatable {
    /// The highest-priority source that was usable.
    public var source: LocationSource
    /// The best geographic estimate (from coordinates, region, IP or the default).
    public var point: GeoPoint
    /// Validated measured RTTs (ms).
    public var rtts: [SFUID: Double]

    public init(source: LocationSource, point: GeoPoint, rtts: [SFUID: Double] = [:]) {
        self.source = source
        self.point = point
        self.rtts = rtts
    }
}
