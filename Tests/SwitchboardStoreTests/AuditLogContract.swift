import Foundation
import SwitchboardCore
import SwitchboardPostgres
import SwitchboardStore
import SwitchboardTesting
import XCTest

/// What every ``AuditLog`` does, written once and run against the in-memory twin, the SQLite
/// store and the PostgreSQL store (the classes below). Each check starts from an empty log.
struct AuditLogContract {
    let makeLog: () throws -> any AuditLog & StoreHealth

    private func at(_ millis: Int64) -> Date { Date(timeIntervalSince1970: Double(1_800_000_000_000 + millis) / 1000) }

    /// Equal entries, times to the millisecond (what every store keeps; a time read back through
    /// a store's own type may differ in its last bits).
    private func assertSame(_ actual: [AuditEntry], _ expected: [AuditEntry], _ message: String = "", line: UInt = #line) {
        func rounded(_ entries: [AuditEntry]) -> [AuditEntry] {
            entries.map { entry in
                var entry = entry
                entry.at = Date(timeIntervalSince1970: (entry.at.timeIntervalSince1970 * 1000).rounded() / 1000)
                return entry
            }
        }
        XCTAssertEqual(rounded(actual), rounded(expected), message, line: line)
    }

    func appendAssignsIncreasingIdsAndEntriesComeNewestFirst() throws {
        let log = try makeLog()
        XCTAssertEqual(try log.entries(limit: 10, before: nil), [])
        var appended: [AuditEntry] = []
        for n in 1...5 {
            let entry = AuditEntry(at: at(Int64(n)), actor: "127.0.0.1", action: "drain", target: "peer-\(n)", detail: "n=\(n)")
            let stored = try log.append(entry)
            var expected = entry
            expected.id = stored.id
            XCTAssertEqual(stored, expected, "the entry back with its id")
            appended.append(stored)
        }
        let ids = appended.compactMap(\.id)
        XCTAssertEqual(ids.count, 5)
        XCTAssertEqual(ids, ids.sorted())
        XCTAssertEqual(Set(ids).count, 5)
        assertSame(try log.entries(limit: 10, before: nil), appended.reversed())
        assertSame(try log.entries(limit: 2, before: nil), Array(appended.reversed().prefix(2)))
        assertSame(try log.entries(limit: 2, before: ids[3]), [appended[2], appended[1]], "the page below an id")
        XCTAssertEqual(try log.entries(limit: 10, before: ids[0]), [])
        XCTAssertEqual(try log.entries(limit: 0, before: nil), [])
    }

    func textAndTimesRoundTrip() throws {
        let log = try makeLog()
        let entry = AuditEntry(at: at(123), actor: "[::1]:5000", action: "webhook.endpoint.rotate_secret", target: "élan 🎉 \"q\" \\", detail: String(repeating: "x", count: 10_000))
        _ = try log.append(entry)
        _ = try log.append(AuditEntry(at: at(124), actor: "a", action: "b"))
        let read = try log.entries(limit: 10, before: nil)
        XCTAssertEqual(read.map(\.target), ["", entry.target], "target and detail default to empty")
        XCTAssertEqual(read.map(\.detail), ["", entry.detail])
        XCTAssertEqual(read[1].actor, entry.actor)
        XCTAssertEqual(read[1].action, entry.action)
        XCTAssertEqual(read[1].at.timeIntervalSince1970, entry.at.timeIntervalSince1970, accuracy: 1e-5, "to the millisecond")
    }

    func aNULIsRefusedAndNothingIsStored() throws {
        let log = try makeLog()
        for entry in [AuditEntry(at: at(1), actor: "a\u{0}", action: "b"), AuditEntry(at: at(1), actor: "a", action: "b", detail: "\u{0}")] {
            XCTAssertThrowsError(try log.append(entry)) { error in
                XCTAssertEqual((error as? SwitchboardError)?.code, .invalidRequest)
            }
        }
        XCTAssertEqual(try log.entries(limit: 10, before: nil), [])
        XCTAssertTrue(log.isWritable())
    }
}

/// One test per ``AuditLogContract`` check, for each implementation.
protocol AuditLogContractCases {
    func test_appendAssignsIncreasingIdsAndEntriesComeNewestFirst() throws
    func test_textAndTimesRoundTrip() throws
    func test_aNULIsRefusedAndNothingIsStored() throws
}

final class InMemoryAuditLogContractTests: XCTestCase, AuditLogContractCases {
    private let contract = AuditLogContract(makeLog: { InMemoryAuditLog() })
    func test_appendAssignsIncreasingIdsAndEntriesComeNewestFirst() throws { try contract.appendAssignsIncreasingIdsAndEntriesComeNewestFirst() }
    func test_textAndTimesRoundTrip() throws { try contract.textAndTimesRoundTrip() }
    func test_aNULIsRefusedAndNothingIsStored() throws { try contract.aNULIsRefusedAndNothingIsStored() }
}

final class SQLiteAuditLogContractTests: XCTestCase, AuditLogContractCases {
    private var contract: AuditLogContract {
        AuditLogContract(makeLog: { [unowned self] in try SQLiteStore(configuration: StoreConfiguration(directory: try self.temporaryDirectory())) })
    }
    func test_appendAssignsIncreasingIdsAndEntriesComeNewestFirst() throws { try contract.appendAssignsIncreasingIdsAndEntriesComeNewestFirst() }
    func test_textAndTimesRoundTrip() throws { try contract.textAndTimesRoundTrip() }
    func test_aNULIsRefusedAndNothingIsStored() throws { try contract.aNULIsRefusedAndNothingIsStored() }
}

/// Against a real PostgreSQL server (``PostgresTestServer``), a new database per check.
final class PostgresAuditLogContractTests: XCTestCase, AuditLogContractCases {
    private var contract: AuditLogContract {
        AuditLogContract(makeLog: { try PostgresStore(configuration: try PostgresTestServer.running().database()) })
    }
    func test_appendAssignsIncreasingIdsAndEntriesComeNewestFirst() throws { try contract.appendAssignsIncreasingIdsAndEntriesComeNewestFirst() }
    func test_textAndTimesRoundTrip() throws { try contract.textAndTimesRoundTrip() }
    func test_aNULIsRefusedAndNothingIsStored() throws { try contract.aNULIsRefusedAndNothingIsStored() }
}
