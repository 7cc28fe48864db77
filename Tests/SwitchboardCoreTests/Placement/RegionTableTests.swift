import Foundation
import SwitchboardCore
import XCTest

final class RegionTableTests: XCTestCase {
    private let header = "code,name,kind,latitude,longitude"

    func test_theBuiltinTableIsConfigRegionsCsvParsed() throws {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent()
        let text = try String(contentsOf: root.appendingPathComponent("config/regions.csv"), encoding: .utf8)
        let rows = text.split(separator: "\n").dropFirst().filter { !$0.isEmpty }.count
        let fromDisk = try RegionTable(csv: text)
        XCTAssertEqual(fromDisk.regions.count, rows)
        XCTAssertGreaterThan(rows, 100)
        XCTAssertEqual(RegionTable.builtin, fromDisk, "BuiltinRegions.swift is out of date: run scripts/gen-regions")
    }

    func test_codesAreStoredLowerCaseAndLookedUpCaseInsensitively() throws {
        let table = try RegionTable(csv: "\(header)\nFRA,Frankfurt,city,50.1109,8.6821\n")
        XCTAssertEqual(Array(table.regions.keys), ["fra"])
        XCTAssertEqual(table.point(of: "Fra"), GeoPoint(latitude: 50.1109, longitude: 8.6821))
        XCTAssertEqual(table.points["fra"], GeoPoint(latitude: 50.1109, longitude: 8.6821))
    }

    func test_windowsLineEndingsParseLikeUnixOnes() throws {
        let table = try RegionTable(csv: "\(header)\r\nfra,Frankfurt,city,50.1109,8.6821\r\nnrt,Tokyo,city,35.68,139.69\r\n")
        XCTAssertEqual(Set(table.regions.keys), ["fra", "nrt"])
    }

    func test_aBadRowIsRefusedNamingItsLineNumber() {
        let bad = [
            "fra,Frankfurt,city,50.1", "fra,Frankfurt,city,north,8.6", "fra,Frankfurt,city,95,8.6", ",Frankfurt,city,50,8",
            "fra,Frankfurt,city,50,8,extra",
        ]
        for row in bad {
            XCTAssertThrowsError(try RegionTable(csv: "\(header)\nnrt,Tokyo,city,35.68,139.69\n\(row)\n"), row) { error in
                XCTAssertTrue("\(error)".contains("line 3"), "\(row): \(error)")
            }
        }
    }

    func test_aDuplicateCodeIsRefusedWhateverItsCase() {
        XCTAssertThrowsError(try RegionTable(csv: "\(header)\nfra,A,city,50,8\nFRA,B,city,51,9\n")) { error in
            XCTAssertTrue("\(error)".contains("duplicate"), "\(error)")
        }
    }

    func test_aTableWithoutItsHeaderIsRefused() {
        XCTAssertThrowsError(try RegionTable(csv: "fra,Frankfurt,city,50.1109,8.6821\n"))
        XCTAssertThrowsError(try RegionTable(csv: ""))
    }
}
