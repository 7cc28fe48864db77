/// A point on the earth in decimal degrees.
public struct GeoPoint: Sendable, Equatable, Hashable, Codable, CustomStringConvertible {
    public let latitude: Double
    public let longitude: Double

    /// `nil` unless latitude is in [-90, 90] and longitude in [-180, 180].
    public init?(latitude: Double, longitude: Double) {
        guard latitude.isFinite, longitude.isFinite, (-90...90).contains(latitude), (-180...180).contains(longitude) else {
            return nil
        }
        self.latitude = latitude
        self.longitude = longitude
    }

    /// Mean earth radius (IUGG), km.
    public static let earthRadiusKilometers = 6371.0088

    /// Great-circle (haversine) distance in kilometres.
    public func distanceKilometers(to other: GeoPoint) -> Double {
        let radians = Double.pi / 180
        let phi1 = latitude * radians
        let phi2 = other.latitude * radians
        let deltaPhi = (other.latitude - latitude) * radians
        let deltaLambda = (other.longitude - longitude) * radians
        let sinPhi = (deltaPhi / 2).sine
        let sinLambda = (deltaLambda / 2).sine
        let a = sinPhi * sinPhi + phi1.cosine * phi2.cosine * sinLambda * sinLambda
        return 2 * Self.earthRadiusKilometers * (min(1, a.squareRoot())).arcsine
    }

    public var description: String { "(\(latitude), \(longitude))" }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        let latitude = try container.decode(Double.self, forKey: .latitude)
        let longitude = try container.decode(Double.self, forKey: .longitude)
        guard let point = GeoPoint(latitude: latitude, longitude: longitude) else {
            throw DecodingError.dataCorrupted(.init(codingPath: decoder.codingPath, debugDescription: "latitude or longitude out of range"))
        }
        self = point
    }

    private enum CodingKeys: String, CodingKey { case latitude, longitude }
}
