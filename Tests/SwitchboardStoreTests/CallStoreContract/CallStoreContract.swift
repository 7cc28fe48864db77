import Foundation
import SwitchboardCore
import XCTest

/// What every ``CallStore`` does, written once and run against the SQLite store (with and
/// without its batch log), its in-memory twin and the PostgreSQL store
/// (`CallStoreContractTests.swift`). Each check starts from a new, empty store
/// made by `makeStore`.
///
/// The checks are grouped by area in the `CallStoreContract+*.swift` files. Behaviour only one
/// implementation has (SQLite files, migrations, PRAGMAs; the twin's injected failures) is tested
/// beside that implementation instead.
struct CallStoreContract: CallFixtures {
    let makeStore: () throws -> any CallStore
    /// The placements a store made by `makeStore` holds, by call (read outside the port: the
    /// SFU directory reads them at start).
    let placements: (any CallStore) throws -> [String: String]

    /// A placement as the contract compares it: `sfu` or `sfu#room`.
    static func placed(_ record: PlacementRecord) -> String {
        record.room.map { "\(record.sfu.rawValue)#\($0)" } ?? record.sfu.rawValue
    }

    // MARK: - Assertions

    /// Within a microsecond: a stored time read back through a calendar may be off in its last bits.
    func assertTime(_ actual: Date?, _ expected: TimeInterval, _ message: String = "", file: StaticString = #filePath, line: UInt = #line) {
        guard let actual else { return XCTFail("no time: \(message)", file: file, line: line) }
        XCTAssertEqual(actual.timeIntervalSince1970, expected, accuracy: 1e-6, message, file: file, line: line)
    }
}
