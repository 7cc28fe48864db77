/// Turns a ``LocationHint`` into a ``ResolvedLocation``: RTT vector, then coordinates, then
/// region code, then the IP-prefix table, then the configured default.
public struct LocationResolver: Sendable {
    /// Region code → coordinates.
    public var regions: [String: GeoPoint]
    /// Operator-supplied IP prefixes.
    public var prefixes: IPPrefixTable
    /// Where a client with no usable hint is assumed to be.
    public var fallback: GeoPoint

    /// RTT vectors longer than this are refused whole.
    public static let maximumRTTEntries = 64
    /// Plausible measured RTTs (ms); entries outside are dropped.
    public static let plausibleRTT: ClosedRange<Double> = 0.1...2000

    public init(regions: [String: GeoPoint], prefixes: IPPrefixTable = IPPrefixTable(), fallback: GeoPoint) {
        self.regions = regions
        self.prefixes = prefixes
        self.fallback = fallback
    }

    public func resolve(_ hint: LocationHint) -> ResolvedLocation {
        let (geoSource, point) = geographic(hint)
        let rtts = validRTTs(hint.rtt)
        return ResolvedLocation(source: rtts.isEmpty ? geoSource : .rtt, point: point, rtts: rtts)
    }

    private func geographic(_ hint: LocationHint) -> (LocationSource, GeoPoint) {
        if let latitude = hint.latitude, let longitude = hint.longitude, let point = GeoPoint(latitude: latitude, longitude: longitude) {
            return (.coordinates, point)
        }
        if let code = hint.region?.lowercased(), let point = regions[code] {
            return (.region, point)
        }
        if let ip = hint.ip, let point = prefixes.lookup(ip, regions: regions) {
            return (.ip, point)
        }
        return (.fallback, fallback)
    }

    private func validRTTs(_ vector: [String: Double]?) -> [SFUID: Double] {
        guard let vector, vector.count <= Self.maximumRTTEntries else { return [:] }
        var result: [SFUID: Double] = [:]
        for (key, value) in vector {
            guard let id = SFUID(key), value.isFinite, Self.plausibleRTT.contains(value) else { continue }
            result[id] = value
        }
        return result
    }
}
