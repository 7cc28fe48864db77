import Foundation
import GRDB
import SwitchboardCore
@testable import SwitchboardStore
import XCTest

/// The store's own date text must be exactly what GRDB writes for a `Date`, or stored rows
/// would read back differently (and sort differently) than before.
final class StoredTimeTests: XCTestCase {
    private func grdbText(_ date: Date) -> String? {
        String.fromDatabaseValue(date.databaseValue)
    }

    func test_theTextIsGRDBsTextForDatesAcrossTheRangeTheStoreSees() {
        var generator = SystemRandomNumberGenerator()
        var dates = [
            Date(timeIntervalSince1970: 0), Date(timeIntervalSince1970: 951_782_400), Date(timeIntervalSince1970: 1_800_000_000.0005),
            Date(timeIntervalSince1970: 1_800_000_000.9996), Date(timeIntervalSince1970: 4_102_444_799.999), Date(timeIntervalSince1970: 253_402_300_799.0),
            Date(timeIntervalSince1970: 1_709_164_800.123),  // 2024-02-29
        ]
        for _ in 0..<20_000 {
            let milliseconds = Double(Int64.random(in: 0...253_402_300_799_000, using: &generator))
            dates.append(Date(timeIntervalSince1970: milliseconds / 1000))
            // Times from the wall clock carry microseconds too.
            let now = 1_700_000_000 + Double.random(in: 0..<400_000_000, using: &generator)
            dates.append(Date(timeIntervalSince1970: now))
        }
        for date in dates {
            XCTAssertEqual(StoredTime.text(date), grdbText(date), "\(date.timeIntervalSince1970)")
        }
    }

    func test_aRoundTripThroughTheTextKeepsTheMillisecond() {
        let date = Date(timeIntervalSince1970: 1_800_000_123.456)
        XCTAssertEqual(StoredTime.text(date), "2027-01-15 08:02:03.456")
        XCTAssertEqual(Date.fromDatabaseValue(StoredTime.text(date).databaseValue)?.timeIntervalSince1970 ?? 0, 1_800_000_123.456, accuracy: 1e-6)
    }
}

/// The media column written without `JSONEncoder` reads back as the `Codable` form does.
final class MediaTextTests: XCTestCase {
    func test_theMediaTextDecodesToTheSameStateAsTheEncodersText() throws {
        let states = [
            MediaState(), MediaState(audio: true, video: true, screenshare: true, speaking: true, audioLevel: 0.42, pinned: true),
            MediaState(audioLevel: 1), MediaState(audioLevel: 1e-7),
        ]
        for state in states {
            let text = try StoredJSON.media(state)
            XCTAssertEqual(try JSONDecoder().decode(MediaState.self, from: Data(text.utf8)), state, text)
            let encoded = try JSONSerialization.jsonObject(with: JSONEncoder().encode(state)) as? NSDictionary
            XCTAssertEqual(try JSONSerialization.jsonObject(with: Data(text.utf8)) as? NSDictionary, encoded, text)
        }
        XCTAssertThrowsError(try StoredJSON.media(MediaState(audioLevel: .nan)))
        XCTAssertThrowsError(try StoredJSON.media(MediaState(audioLevel: .infinity)))
    }
}
