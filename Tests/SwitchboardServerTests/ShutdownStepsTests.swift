import Dispatch
import Logging
import Synchronization
import XCTest

@testable import SwitchboardServer

final class ShutdownStepsTests: XCTestCase {
    private let logger = Logger(label: "test", factory: { _ in SwiftLogNoOpLogHandler() })

    /// A step that finishes is waited for and counts as done; one still running at the bound is
    /// left behind by name, and the steps after it still run, in order.
    func test_aStepStillRunningAtItsBoundIsLeftBehindAndTheNextStepsRun() {
        let steps = ShutdownSteps(bound: .milliseconds(50), logger: logger)
        let ran = Mutex<[String]>([])
        let release = DispatchSemaphore(value: 0)
        defer { release.signal() }

        XCTAssertTrue(steps.run("first") { ran.withLock { $0.append("first") } })
        XCTAssertFalse(
            steps.run("store") {
                release.wait()
                ran.withLock { $0.append("store") }
            })
        XCTAssertTrue(steps.run("last") { ran.withLock { $0.append("last") } })

        XCTAssertEqual(steps.leftBehind, ["store"])
        XCTAssertEqual(ran.withLock { $0 }, ["first", "last"], "the stuck step has not finished; the others ran in order")
    }

    /// A step is waited for whole while it ends within its bound, logged when it took long.
    func test_aStepWithinItsBoundIsWaitedFor() {
        let steps = ShutdownSteps(bound: .seconds(30), slow: .zero, logger: logger)
        let finished = Mutex(false)
        XCTAssertTrue(
            steps.run("tunnel") {
                finished.withLock { $0 = true }
            })
        XCTAssertTrue(finished.withLock { $0 })
        XCTAssertEqual(steps.leftBehind, [])
    }

    func test_durationsAreLoggedInSecondsToTheMillisecond() {
        XCTAssertEqual(ShutdownSteps.seconds(.milliseconds(5)), "0.005")
        XCTAssertEqual(ShutdownSteps.seconds(.milliseconds(12_340)), "12.340")
        XCTAssertEqual(ShutdownSteps.seconds(.seconds(5)), "5.000")
    }
}
