import Foundation
import SwitchboardFuzzing
import XCTest

/// Replays every seed (`Fuzz/corpus/<target>/`) and every kept crasher
/// (`Fuzz/crashers/<target>-<hash>`) through the same per-input logic the libFuzzer targets
/// run (``FuzzTarget/run(_:)``).
///
/// A crasher traps, which would take the whole test process down, so each target's inputs run
/// in a child process: this test binary again, filtered to ``test_replayChild`` and told what
/// to replay through the environment. The parent reports which input crashed or hung, with
/// the child's last lines of output, and carries on with the next input.
final class FuzzRegressionTests: XCTestCase {
    /// `Fuzz/`, from this file's path (`Fuzz/RegressionTests/…`).
    static let fuzzDirectory = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()

    /// A child that takes longer than this on its inputs is stopped and the input reported as a hang.
    static let childTimeout: TimeInterval = 300

    func test_peerJSFrame_seedsAndCrashersReplayCleanly() throws { try replay(.peerJSFrame) }
    func test_callFrame_seedsAndCrashersReplayCleanly() throws { try replay(.callFrame) }
    func test_adminBody_seedsAndCrashersReplayCleanly() throws { try replay(.adminBody) }
    func test_token_seedsAndCrashersReplayCleanly() throws { try replay(.token) }
    func test_config_seedsAndCrashersReplayCleanly() throws { try replay(.config) }

    func test_everyTargetHasASeedCorpusAndADictionary() {
        for target in FuzzTarget.allCases {
            XCTAssertGreaterThanOrEqual(Self.seeds(target).count, 3, "Fuzz/corpus/\(target.rawValue)/ needs seeds")
            let dictionary = Self.fuzzDirectory.appendingPathComponent("dict/\(target.rawValue).dict").path
            XCTAssertTrue(FileManager.default.fileExists(atPath: dictionary), "missing \(dictionary)")
        }
    }

    /// The isolation itself: an input that traps is reported with its index and the child's
    /// message, and the inputs after it still run. (The trap is the child's self-test hook below,
    /// not a parser bug.)
    func test_aCrashingInputIsReportedAndTheRestStillRun() throws {
        let scratch = FileManager.default.temporaryDirectory.appendingPathComponent("fuzz-selftest-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: scratch, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: scratch) }
        var inputs: [String] = []
        for (index, text) in ["{\"type\":\"HEARTBEAT\"}", Self.selfTestCrash, "{\"type\":\"LEAVE\"}"].enumerated() {
            let url = scratch.appendingPathComponent("input-\(index)")
            try Data(text.utf8).write(to: url)
            inputs.append(url.path)
        }
        let first = try runChild(.peerJSFrame, inputs, selfTest: true)
        XCTAssertEqual(first.finished, 1)
        XCTAssertEqual(first.stoppedAt?.index, 1, "the crashing input is named")
        XCTAssertTrue(first.stoppedAt?.reason.hasPrefix("crashed") == true, "\(String(describing: first.stoppedAt))")
        XCTAssertTrue(first.output.contains("fuzz replay self-test"), "the child's fatal error is in the report:\n\(first.output)")
        let rest = try runChild(.peerJSFrame, Array(inputs[2...]), selfTest: true)
        XCTAssertEqual(rest.finished, 1)
        XCTAssertNil(rest.stoppedAt)
    }

    // MARK: - Inputs

    static func seeds(_ target: FuzzTarget) -> [String] {
        FuzzTarget.files(at: fuzzDirectory.appendingPathComponent("corpus/\(target.rawValue)").path)
            .filter { FileManager.default.fileExists(atPath: $0) }
    }

    static func crashers(_ target: FuzzTarget) -> [String] {
        let directory = fuzzDirectory.appendingPathComponent("crashers").path
        let names = (try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? []
        return names.filter { $0.hasPrefix(target.rawValue + "-") }.sorted().map { directory + "/" + $0 }
    }

    // MARK: - Parent

    private func replay(_ target: FuzzTarget) throws {
        let inputs = Self.seeds(target) + Self.crashers(target)
        XCTAssertFalse(inputs.isEmpty, "no inputs for \(target.rawValue)")
        var start = 0
        while start < inputs.count {
            let run = try runChild(target, Array(inputs[start...]))
            for (index, message) in run.findings {
                XCTFail("\(target.rawValue): \(relative(inputs[start + index])) broke an invariant: \(message)")
            }
            guard let stopped = run.stoppedAt else {
                XCTAssertEqual(run.finished, inputs.count - start, "\(target.rawValue): the replay child stopped early:\n\(run.output)")
                return
            }
            guard let index = stopped.index else {
                XCTFail("\(target.rawValue): the replay child failed before any input (\(stopped.reason)):\n\(run.output)")
                return
            }
            XCTFail("\(target.rawValue): \(relative(inputs[start + index])) \(stopped.reason); last output:\n\(run.output)")
            start += index + 1
        }
    }

    private func relative(_ path: String) -> String {
        let root = Self.fuzzDirectory.deletingLastPathComponent().path + "/"
        return path.hasPrefix(root) ? String(path.dropFirst(root.count)) : path
    }

    private struct ChildRun {
        var finished = 0
        var findings: [(Int, String)] = []
        /// Set when the child crashed or hung: the input it was running (if any) and how it ended.
        var stoppedAt: (index: Int?, reason: String)?
        /// The tail of the child's output, for the failure message.
        var output = ""
    }

    private func runChild(_ target: FuzzTarget, _ inputs: [String], selfTest: Bool = false) throws -> ChildRun {
        let scratch = FileManager.default.temporaryDirectory.appendingPathComponent("fuzz-replay-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: scratch, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: scratch) }
        let list = scratch.appendingPathComponent("inputs")
        try inputs.joined(separator: "\n").write(to: list, atomically: true, encoding: .utf8)
        let stdoutURL = scratch.appendingPathComponent("stdout")
        let stderrURL = scratch.appendingPathComponent("stderr")
        _ = FileManager.default.createFile(atPath: stdoutURL.path, contents: nil)
        _ = FileManager.default.createFile(atPath: stderrURL.path, contents: nil)

        let process = Process()
        process.executableURL = URL(fileURLWithPath: try FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe"))
        process.arguments = ["SwitchboardFuzzTests.FuzzRegressionTests/test_replayChild"]
        var environment = ProcessInfo.processInfo.environment
        environment["SWITCHBOARD_FUZZ_REPLAY_TARGET"] = target.rawValue
        environment["SWITCHBOARD_FUZZ_REPLAY_LIST"] = list.path
        // The crashed thread's symbolicated stack only: a compact report for the failure message.
        environment["SWIFT_BACKTRACE"] = "enable=yes,interactive=no,color=no,threads=crashed,registers=none,images=none"
        environment["SWITCHBOARD_FUZZ_REPLAY_SELFTEST"] = selfTest ? "1" : nil
        process.environment = environment
        process.standardOutput = try FileHandle(forWritingTo: stdoutURL)
        process.standardError = try FileHandle(forWritingTo: stderrURL)
        let exited = DispatchSemaphore(value: 0)
        process.terminationHandler = { _ in exited.signal() }
        try process.run()
        let timedOut = exited.wait(timeout: .now() + Self.childTimeout) == .timedOut
        if timedOut {
            process.terminate()
            if exited.wait(timeout: .now() + 10) == .timedOut { kill(process.processIdentifier, SIGKILL) }
        }

        let stdout = (try? String(contentsOf: stdoutURL, encoding: .utf8)) ?? ""
        let stderr = (try? String(contentsOf: stderrURL, encoding: .utf8)) ?? ""
        var run = ChildRun()
        var running: Int?
        for line in stdout.split(separator: "\n") where line.hasPrefix(Self.marker) {
            let words = line.dropFirst(Self.marker.count).split(separator: " ", maxSplits: 2)
            guard words.count >= 2, let index = Int(words[1]) else { continue }
            switch words[0] {
            case "begin": running = index
            case "ok":
                run.finished += 1
                running = nil
            case "finding":
                run.finished += 1
                running = nil
                run.findings.append((index, words.count > 2 ? String(words[2]) : ""))
            default: break
            }
        }
        let clean = !timedOut && process.terminationReason == .exit && process.terminationStatus == 0
        // The fatal error and backtrace come first on stderr; the last markers say where it stopped.
        run.output = (stdout.split(separator: "\n").suffix(6) + stderr.split(separator: "\n", omittingEmptySubsequences: false).prefix(60))
            .joined(separator: "\n")
        if !clean || running != nil {
            let how =
                timedOut
                ? "hung (no result within \(Int(Self.childTimeout)) s)"
                : process.terminationReason == .uncaughtSignal
                    ? "crashed (signal \(process.terminationStatus))" : "crashed (exit status \(process.terminationStatus))"
            run.stoppedAt = (running, how)
        }
        return run
    }

    // MARK: - Child

    static let marker = "FUZZ-REPLAY "
    /// With `SWITCHBOARD_FUZZ_REPLAY_SELFTEST=1`, a child traps on exactly this input.
    static let selfTestCrash = "fuzz-replay-self-test-crash"

    /// Does nothing in a normal run. In a replay child (see the type's documentation) it runs the
    /// listed inputs in order, writing a marker line before and after each.
    func test_replayChild() throws {
        let environment = ProcessInfo.processInfo.environment
        guard let name = environment["SWITCHBOARD_FUZZ_REPLAY_TARGET"], let list = environment["SWITCHBOARD_FUZZ_REPLAY_LIST"] else { return }
        let target = try XCTUnwrap(FuzzTarget(rawValue: name))
        let paths = try String(contentsOfFile: list, encoding: .utf8).split(separator: "\n").map(String.init)
        for (index, path) in paths.enumerated() {
            emit("begin \(index)")
            let bytes = Array(try XCTUnwrap(FileManager.default.contents(atPath: path), "cannot read \(path)"))
            if environment["SWITCHBOARD_FUZZ_REPLAY_SELFTEST"] == "1", bytes == Array(Self.selfTestCrash.utf8) {
                fatalError("fuzz replay self-test: trapping on purpose")
            }
            if let finding = target.run(bytes) {
                emit("finding \(index) " + finding.message.replacingOccurrences(of: "\n", with: "\\n"))
            } else {
                emit("ok \(index)")
            }
        }
    }

    /// Unbuffered, so the parent sees the marker of an input that crashes.
    private func emit(_ line: String) {
        FileHandle.standardOutput.write(Data((Self.marker + line + "\n").utf8))
    }
}
