import SwitchboardApp
import SwitchboardTesting
import XCTest

/// The tests' webhook executor against the executor contract (the daemon's event-loop executor
/// runs the same checks in SwitchboardWebhooksTests).
final class DispatchWebhookExecutorTests: XCTestCase {
    private let contract = WebhookExecutorContract(DispatchWebhookExecutor(label: "test.webhooks"))

    func testRunsInOrderOnTheExecutor() { XCTAssertEqual(contract.checkOrderAndCurrent(), []) }
    func testSyncReturnsTheResult() { XCTAssertEqual(contract.checkSync(), []) }
    func testScheduledWorkRunsAfterItsDelayUnlessCancelled() { XCTAssertEqual(contract.checkScheduleAndCancel(), []) }
}
