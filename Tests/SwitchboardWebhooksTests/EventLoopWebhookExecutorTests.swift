import SwitchboardApp
import SwitchboardTesting
import SwitchboardWebhooks
import XCTest

/// The daemon's webhook executor (the HTTP client's own event loop) against the executor
/// contract.
final class EventLoopWebhookExecutorTests: XCTestCase {
    private var sender: WebhookSender!

    override func setUp() {
        sender = WebhookSender(connectTimeout: .seconds(2))
    }

    override func tearDown() async throws {
        await sender.shutdown()
    }

    func testRunsInOrderOnTheExecutor() { XCTAssertEqual(WebhookExecutorContract(sender.executor).checkOrderAndCurrent(), []) }
    func testSyncReturnsTheResult() { XCTAssertEqual(WebhookExecutorContract(sender.executor).checkSync(), []) }
    func testScheduledWorkRunsAfterItsDelayUnlessCancelled() {
        XCTAssertEqual(WebhookExecutorContract(sender.executor).checkScheduleAndCancel(), [])
    }
}
