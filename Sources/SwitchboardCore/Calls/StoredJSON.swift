import Foundation

/// The JSON text every store keeps for a session's media state, a location hint and a
/// placement's locations: one writer, so the SQLite and PostgreSQL stores hold the same text
/// and refuse the same values (a non-finite number, which the tests of both check).
public enum StoredJSON {
    /// A session's media state as JSON, written directly (`JSONEncoder` was a measurable share
    /// of a join's commit); the same keys and values as its `Codable` form, and a non-finite
    /// level refused as the encoder refuses it.
    public static func media(_ media: MediaState) throws -> String {
        guard media.audioLevel.isFinite else {
            throw EncodingError.invalidValue(media.audioLevel, EncodingError.Context(codingPath: [], debugDescription: "audio_level is not finite"))
        }
        return JSONValue.object([
            "audio": .bool(media.audio), "audio_level": .number(media.audioLevel), "pinned": .bool(media.pinned),
            "screenshare": .bool(media.screenshare), "speaking": .bool(media.speaking), "video": .bool(media.video),
        ]).text
    }

    /// A location hint as JSON with sorted keys, written directly like ``media(_:)`` (its
    /// `JSONEncoder` was 3 % of the daemon's CPU at 1,000 joins/s); absent fields are left out
    /// and a non-finite number is refused, as the encoder does.
    public static func location(_ location: LocationHint) throws -> String {
        var fields: [String: JSONValue] = [:]
        func number(_ value: Double) throws -> JSONValue {
            guard value.isFinite else {
                throw EncodingError.invalidValue(value, EncodingError.Context(codingPath: [], debugDescription: "a location number is not finite"))
            }
            return .number(value)
        }
        if let rtt = location.rtt { fields["rtt"] = .object(try rtt.mapValues(number)) }
        if let latitude = location.latitude { fields["latitude"] = try number(latitude) }
        if let longitude = location.longitude { fields["longitude"] = try number(longitude) }
        if let region = location.region { fields["region"] = .string(region) }
        if let ip = location.ip { fields["ip"] = .string(ip) }
        return JSONValue.object(fields).text
    }

    public static func encoded(_ value: some Encodable) throws -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = .sortedKeys
        return String(decoding: try encoder.encode(value), as: UTF8.self)
    }
}
