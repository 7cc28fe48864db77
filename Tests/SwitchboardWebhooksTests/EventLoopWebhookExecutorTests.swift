import CSwitchboardShims
import SwitchboardApp
import SwitchboardTesting
import SwitchboardWebhooks
import XCTest

/// The daemon's webhook executor (the HTTP client's own event loop) against the executor
/// contract, and the priority the sender gives that thread.
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

    /// `webhooks.sched_idle`: the event-loop thread runs under SCHED_IDLE, and this thread does not.
    func testSchedIdlePutsTheEventLoopThreadUnderSchedIdle() async {
        let idle = WebhookSender(connectTimeout: .seconds(2), niceness: 7, schedIdle: true)
        XCTAssertEqual(idle.priority, "sched_idle")
        XCTAssertEqual(idle.executor.sync { sb_thread_is_idle_policy() }, 1)
        XCTAssertEqual(sb_thread_is_idle_policy(), 0)
        XCTAssertEqual(sender.executor.sync { sb_thread_is_idle_policy() }, 0, "a sender without sched_idle keeps the normal policy")
        await idle.shutdown()
    }

    /// Without SCHED_IDLE the thread takes the nice value (raising one's own needs no privilege).
    func testNicenessRaisesTheEventLoopThreadsNiceValue() async {
        let base = sb_thread_nice()
        let wanted = min(19, max(base + 3, 5))
        let niced = WebhookSender(connectTimeout: .seconds(2), niceness: wanted, schedIdle: false)
        XCTAssertEqual(niced.priority, "nice \(wanted)")
        XCTAssertEqual(niced.executor.sync { sb_thread_nice() }, wanted)
        XCTAssertEqual(niced.executor.sync { sb_thread_is_idle_policy() }, 0)
        await niced.shutdown()
    }
}
