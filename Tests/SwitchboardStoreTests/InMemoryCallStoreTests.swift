import Foundation
import SwitchboardCore
import SwitchboardTesting
import XCTest

/// What only the in-memory twin has: injected failures and the record of committed batches.
/// Everything the port promises is checked for both implementations by `CallStoreContract`.
final class InMemoryCallStoreTests: XCTestCase, CallFixtures {
    private let store = InMemoryCallStore()

    func test_anInjectedFailureChangesNothingAndIsNotCounted() throws {
        try store.apply([.saveCall(call("c0"))])
        XCTAssertEqual(store.applyCount, 1)
        store.failNextApply = true
        var changed = call("c0")
        changed.session = 2
        assertSwitchboardError(
            SwitchboardError(.unavailable, "store failure injected"),
            try store.apply([.saveCall(changed), .saveCall(call("c1")), .saveConnection(connection("k-1"))]))
        XCTAssertEqual(try store.loadLiveState(), CallStateSnapshot(calls: [call("c0")]))
        XCTAssertEqual(store.applyCount, 1)
        XCTAssertFalse(store.failNextApply, "the injected failure is one-shot")

        try store.apply([.saveCall(changed)])
        XCTAssertEqual(try store.loadCall(cid("c0"))?.call.session, 2)
        XCTAssertEqual(store.applyCount, 2)
    }

    func test_whileEveryApplyFailsNothingCommits() throws {
        store.failAllApplies = true
        assertSwitchboardError(.unavailable, try store.apply([.saveCall(call("c1"))]))
        assertSwitchboardError(.unavailable, try store.apply([]))
        XCTAssertTrue(store.failAllApplies, "it stays set")
        XCTAssertNil(try store.loadCall(cid("c1")))
        store.failAllApplies = false
        try store.apply([])
        XCTAssertEqual(store.applyCount, 1)
    }

    /// Batches the store refuses itself (a NUL) are not recorded either.
    func test_appliedBatchesAreTheCommittedOnesAsGiven() throws {
        var refused = connection("k-1")
        refused.resumeToken = "a\u{0}b"
        var precise = call("c0")
        precise.createdAt = date(0).addingTimeInterval(0.000_1)
        try store.apply([.saveCall(precise)])
        assertSwitchboardError(.invalidRequest, try store.apply([.saveCall(call("c1")), .saveConnection(refused)]))
        try store.apply([.saveCall(call("c1")), .deleteConnection(ClientConnectionID("k-1"))])
        XCTAssertEqual(store.appliedBatches, [[.saveCall(precise)], [.saveCall(call("c1")), .deleteConnection(ClientConnectionID("k-1"))]])
        XCTAssertEqual(store.applyCount, 2)
        XCTAssertEqual(try store.loadCall(cid("c0"))?.call.createdAt, date(0), "stored to the millisecond, recorded as given")
    }
}
