import Foundation
import SwitchboardCore
import XCTest

final class TimeOrderedIDTests: XCTestCase {
    func test_anIDIsAVersion7UUIDWithItsTimeFirstAndItsRandomBitsAfter() throws {
        let id = TimeOrderedID.make(milliseconds: 0x0190_1234_5678, random: (high: 0xFFFF_FFFF_FFFF_FABC, low: 0xFFFF_FFFF_FFFF_FFFF))
        XCTAssertEqual(id, "01901234-5678-7abc-bfff-ffffffffffff")
        let parsed = try XCTUnwrap(UUID(uuidString: id), "Foundation reads it as a UUID")
        XCTAssertEqual(parsed.uuidString.lowercased(), id)
        XCTAssertEqual(TimeOrderedID.make(milliseconds: 1, random: (0, 0)), "00000000-0001-7000-8000-000000000000")
    }

    func test_laterMillisecondsSortAfterWhateverTheRandomBits() {
        var generator = SplitMix64(seed: 7)
        var previous = ""
        for milliseconds in stride(from: UInt64(1_800_000_000_000), to: 1_800_000_000_300, by: 3) {
            let id = TimeOrderedID.make(milliseconds: milliseconds, random: (generator.next(), generator.next()))
            XCTAssertGreaterThan(id, previous)
            previous = id
        }
    }
}
