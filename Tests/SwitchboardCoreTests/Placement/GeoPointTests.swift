import Foundation
import SwitchboardCore
import XCTest

final class GeoPointTests: XCTestCase {
    private let frankfurt = Fixture.point(50.1109, 8.6821)
    private let london = Fixture.point(51.5074, -0.1278)
    private let jfk = Fixture.point(40.6413, -73.7781)
    private let heathrow = Fixture.point(51.4700, -0.4543)

    func test_frankfurtToLondonIsAbout636Kilometres() {
        XCTAssertEqual(frankfurt.distanceKilometers(to: london), 636, accuracy: 5)
    }

    func test_jfkToHeathrowIsAbout5540Kilometres() {
        XCTAssertEqual(jfk.distanceKilometers(to: heathrow), 5540, accuracy: 10)
    }

    func test_antipodesAreHalfTheEarthsCircumferenceApart() {
        let halfCircumference = Double.pi * GeoPoint.earthRadiusKilometers
        XCTAssertEqual(halfCircumference, 20015, accuracy: 1)
        let pairs: [(GeoPoint, GeoPoint)] = [
            (Fixture.point(0, 0), Fixture.point(0, 180)),
            (Fixture.point(90, 0), Fixture.point(-90, 0)),
            (Fixture.point(40, -74), Fixture.point(-40, 106)),
            (Fixture.point(-33.9, 151.2), Fixture.point(33.9, -28.8)),
        ]
        for (a, b) in pairs {
            XCTAssertEqual(a.distanceKilometers(to: b), halfCircumference, accuracy: 0.01, "\(a) – \(b)")
        }
    }

    func test_distanceIsSymmetricAndZeroToItself() {
        XCTAssertEqual(frankfurt.distanceKilometers(to: frankfurt), 0)
        XCTAssertEqual(frankfurt.distanceKilometers(to: jfk), jfk.distanceKilometers(to: frankfurt), accuracy: 1e-9)
    }

    func test_theDatelineIsNoWall() {
        let west = Fixture.point(0, 179.5)
        let east = Fixture.point(0, -179.5)
        // One degree of longitude at the equator: 2πR / 360 ≈ 111.2 km.
        XCTAssertEqual(west.distanceKilometers(to: east), 111.2, accuracy: 0.1)
        XCTAssertEqual(Fixture.point(10, 180).distanceKilometers(to: Fixture.point(10, -180)), 0, accuracy: 1e-9)
    }

    func test_distanceAgreesWithAnIndependentFormulaOnRandomPairs() {
        var random = SplitMix64(seed: 0x6E0)
        for _ in 0..<2000 {
            let a = Fixture.point(random.unit() * 180 - 90, random.unit() * 360 - 180)
            let b = Fixture.point(random.unit() * 180 - 90, random.unit() * 360 - 180)
            XCTAssertEqual(a.distanceKilometers(to: b), Reference.kilometers(a, b), accuracy: 1e-6, "\(a) – \(b)")
        }
    }

    func test_outOfRangeOrNonFiniteCoordinatesMakeNoPoint() {
        XCTAssertNotNil(GeoPoint(latitude: 90, longitude: 180))
        XCTAssertNotNil(GeoPoint(latitude: -90, longitude: -180))
        XCTAssertNil(GeoPoint(latitude: 90.0001, longitude: 0))
        XCTAssertNil(GeoPoint(latitude: -91, longitude: 0))
        XCTAssertNil(GeoPoint(latitude: 0, longitude: 180.0001))
        XCTAssertNil(GeoPoint(latitude: 0, longitude: -181))
        XCTAssertNil(GeoPoint(latitude: .nan, longitude: 0))
        XCTAssertNil(GeoPoint(latitude: 0, longitude: .infinity))
    }

    func test_decodingRefusesOutOfRangeCoordinates() throws {
        let good = try JSONDecoder().decode(GeoPoint.self, from: Data(#"{"latitude": 50.1, "longitude": 8.7}"#.utf8))
        XCTAssertEqual(good, Fixture.point(50.1, 8.7))
        XCTAssertThrowsError(try JSONDecoder().decode(GeoPoint.self, from: Data(#"{"latitude": 95, "longitude": 8.7}"#.utf8)))
    }
}
