import Foundation
import SwitchboardApp
import XCTest

final class ThreadPriorityTests: XCTestCase {
    func test_workRunsAtTheGivenNiceValueAndTheThreadGetsItsOwnBack() throws {
        try XCTSkipUnless(ThreadPriority.canRestore, "this machine does not let a thread lower its nice value again (no root, no RLIMIT_NICE)")
        let before = ThreadPriority.current
        let inside = ThreadPriority.run(niceness: before + 5) { ThreadPriority.current }
        XCTAssertEqual(inside, before + 5)
        XCTAssertEqual(ThreadPriority.current, before)
        XCTAssertEqual(ThreadPriority.run(niceness: 0) { ThreadPriority.current }, before, "0 leaves the thread as it is")
    }
}
