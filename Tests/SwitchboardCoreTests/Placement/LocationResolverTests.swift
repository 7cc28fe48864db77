import SwitchboardCore
import XCTest

final class LocationResolverTests: XCTestCase {
    private let fallback = Fixture.point(0, 0)
    private let coordinates = Fixture.point(48.8566, 2.3522)  // Paris: in no region of the fixture

    private func resolver(prefixes: String = "10.0.0.0/8,nrt\n192.0.2.0/24,-33.9399,151.1753\n") throws -> LocationResolver {
        LocationResolver(regions: Fixture.regions, prefixes: try IPPrefixTable(csv: prefixes), fallback: fallback)
    }

    private func hint(
        rtt: [String: Double]? = nil, latitude: Double? = nil, longitude: Double? = nil, region: String? = nil, ip: String? = nil
    ) -> LocationHint {
        LocationHint(rtt: rtt, latitude: latitude, longitude: longitude, region: region, ip: ip)
    }

    // MARK: priority

    func test_theResolverTakesTheFirstUsableSourceInPriorityOrder() throws {
        let resolver = try resolver()
        let rtt = ["sfu-fra": 12.5]
        let (lat, lon) = (coordinates.latitude, coordinates.longitude)
        let cases: [(String, LocationHint, LocationSource, GeoPoint)] = [
            ("everything given: rtt wins, the point from coordinates", hint(rtt: rtt, latitude: lat, longitude: lon, region: "sin", ip: "10.1.1.1"), .rtt, coordinates),
            ("rtt and region: rtt wins, the point from the region", hint(rtt: rtt, region: "sin", ip: "10.1.1.1"), .rtt, Fixture.region("sin")),
            ("rtt alone: the point is the default", hint(rtt: rtt), .rtt, fallback),
            ("no rtt: coordinates beat region and ip", hint(latitude: lat, longitude: lon, region: "sin", ip: "10.1.1.1"), .coordinates, coordinates),
            ("no coordinates: region beats ip", hint(region: "sin", ip: "10.1.1.1"), .region, Fixture.region("sin")),
            ("only an ip in a region prefix", hint(ip: "10.1.1.1"), .ip, Fixture.region("nrt")),
            ("only an ip in a coordinate prefix", hint(ip: "192.0.2.77"), .ip, Fixture.point(-33.9399, 151.1753)),
            ("nothing at all", hint(), .fallback, fallback),
            ("latitude without longitude falls through", hint(latitude: lat, region: "sin"), .region, Fixture.region("sin")),
            ("longitude without latitude falls through", hint(longitude: lon, ip: "10.1.1.1"), .ip, Fixture.region("nrt")),
            ("out-of-range coordinates fall through", hint(latitude: 91, longitude: lon, region: "sin"), .region, Fixture.region("sin")),
            ("NaN coordinates fall through", hint(latitude: .nan, longitude: .nan, region: "sin"), .region, Fixture.region("sin")),
            ("an unknown region falls through to the ip", hint(region: "atlantis", ip: "10.1.1.1"), .ip, Fixture.region("nrt")),
            ("an unknown region and no ip fall through to the default", hint(region: "atlantis"), .fallback, fallback),
            ("an ip in no prefix falls through to the default", hint(ip: "203.0.113.9"), .fallback, fallback),
            ("an unparseable ip falls through to the default", hint(ip: "not-an-ip"), .fallback, fallback),
            ("an rtt vector with no valid entry falls through", hint(rtt: ["sfu-fra": -1], region: "sin"), .region, Fixture.region("sin")),
        ]
        for (name, hint, source, point) in cases {
            let resolved = resolver.resolve(hint)
            XCTAssertEqual(resolved.source, source, name)
            XCTAssertEqual(resolved.point, point, name)
            XCTAssertEqual(resolved.rtts.isEmpty, source != .rtt, name)
        }
    }

    func test_regionCodesAreCaseInsensitive() throws {
        let resolver = try resolver()
        for code in ["FRA", "Fra", "fRA"] {
            let resolved = resolver.resolve(hint(region: code))
            XCTAssertEqual(resolved.source, .region, code)
            XCTAssertEqual(resolved.point, Fixture.region("fra"), code)
        }
    }

    func test_regionCodesInThePrefixTableAreCaseInsensitiveToo() throws {
        let resolver = try resolver(prefixes: "10.0.0.0/8,NRT\n")
        XCTAssertEqual(resolver.resolve(hint(ip: "10.2.3.4")), ResolvedLocation(source: .ip, point: Fixture.region("nrt")))
    }

    // MARK: RTT vector validation

    func test_anRTTVectorOfSixtyFourEntriesIsAccepted() throws {
        let vector = Dictionary(uniqueKeysWithValues: (0..<LocationResolver.maximumRTTEntries).map { ("sfu-\($0)", Double($0) + 1) })
        let resolved = try resolver().resolve(hint(rtt: vector, region: "fra"))
        XCTAssertEqual(resolved.source, .rtt)
        XCTAssertEqual(resolved.rtts.count, 64)
        XCTAssertEqual(resolved.rtts[Fixture.id("sfu-63")], 64)
    }

    func test_anOversizedRTTVectorIsRefusedWhole() throws {
        let vector = Dictionary(uniqueKeysWithValues: (0...LocationResolver.maximumRTTEntries).map { ("sfu-\($0)", 10.0) })
        XCTAssertEqual(vector.count, 65)
        let resolved = try resolver().resolve(hint(rtt: vector, region: "fra"))
        XCTAssertEqual(resolved.source, .region)
        XCTAssertEqual(resolved.rtts, [:])
        XCTAssertEqual(resolved.point, Fixture.region("fra"))
    }

    func test_implausibleRTTEntriesAreDroppedAndTheRestKept() throws {
        let vector: [String: Double] = [
            "keep-low": 0.1, "keep-mid": 42, "keep-high": 2000,
            "nan": .nan, "negative": -5, "zero": 0, "too-small": 0.09, "huge": 2000.5, "infinite": .infinity,
            "minus-infinity": -.infinity, "bad id!": 10, "": 10,
            String(repeating: "x", count: 65): 10,
        ]
        let resolved = try resolver().resolve(hint(rtt: vector))
        XCTAssertEqual(resolved.source, .rtt)
        XCTAssertEqual(resolved.rtts, [Fixture.id("keep-low"): 0.1, Fixture.id("keep-mid"): 42, Fixture.id("keep-high"): 2000])
    }

    func test_anEmptyRTTVectorCountsAsAbsent() throws {
        let resolved = try resolver().resolve(hint(rtt: [:], latitude: 1, longitude: 2))
        XCTAssertEqual(resolved.source, .coordinates)
    }

    func test_theIPSourceUsesTheLongestPrefix() throws {
        let resolver = try resolver(prefixes: "10.0.0.0/8,nrt\n10.9.0.0/16,syd\n")
        XCTAssertEqual(resolver.resolve(hint(ip: "10.9.1.1")).point, Fixture.region("syd"))
        XCTAssertEqual(resolver.resolve(hint(ip: "10.8.1.1")).point, Fixture.region("nrt"))
    }

    func test_everyLocationSourceHasTheNameTheAPIRecords() {
        XCTAssertEqual(LocationSource.allCases.map(\.rawValue), ["rtt", "coordinates", "region", "ip", "default"])
    }
}
