import Foundation
import Logging
import SwitchboardCore
@testable import SwitchboardWebhooks
import XCTest

/// The daemon–worker wire (ADR 0011) over a real socket pair: attempts are a header line and the
/// body's bytes as they are, answers a line each; what is not one is refused.
final class WebhookWorkerWireTests: XCTestCase {
    private var fds: [Int32] = [-1, -1]

    override func setUp() {
        XCTAssertEqual(socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0, &fds), 0)
    }

    override func tearDown() {
        for fd in fds where fd >= 0 { close(fd) }
    }

    private func send(_ bytes: [UInt8]) {
        XCTAssertEqual(SocketIO.send(bytes, on: fds[0]), 0)
    }

    private func endInput() {
        shutdown(fds[0], Int32(SHUT_WR))
    }

    private func attempt(_ n: UInt64, body: String) -> WebhookWorkerWire.Attempt {
        WebhookWorkerWire.Attempt(
            n: n, id: "msg_\(n)", url: "https://h.example/x?y=1", body: Array(body.utf8), keys: ["AAEC", "/w=="], now: 1_795_782_185_763,
            timeoutMs: 10_000)
    }

    func test_attemptsRoundTripWhateverTheirBodiesHold() {
        // A raw newline and a tab in a body, an empty body, non-ASCII: the body is counted, not
        // escaped, so none of it can end the frame early.
        let sent = [attempt(1, body: "{\"note\":\"é \\\"q\\\"\"}\n{\t}"), attempt(2, body: ""), attempt(3, body: String(repeating: "x", count: 200_000))]
        let frames = sent.flatMap(\.frame)
        XCTAssertEqual(sent[0].frame.firstIndex(of: 0x0A), sent[0].frame.count - sent[0].body.count - 1, "the header is one line")
        // Written one byte at a time for the first frame, the rest at once.
        let first = sent[0].frame.count
        for byte in frames[..<first] { send([byte]) }
        let rest = Array(frames[first...])
        let writer = Thread { [fds] in _ = SocketIO.send(rest, on: fds[0]); shutdown(fds[0], Int32(SHUT_WR)) }
        writer.start()
        var reader = LineReader(fd: fds[1])
        for expected in sent { XCTAssertEqual(WebhookWorkerWire.Attempt.read(from: &reader), .attempt(expected)) }
        XCTAssertEqual(WebhookWorkerWire.Attempt.read(from: &reader), .end)
    }

    func test_aHeaderThatIsNotOneOrABodyCutShortIsUnreadable() {
        for bad in ["not json", #"{"n":1}"#, #"{"n":-1,"id":"m","url":"u","body_bytes":0,"keys":[],"now":1,"timeout_ms":1}"#,
            #"{"n":1,"id":"m","url":"u","body_bytes":0,"keys":[1],"now":1,"timeout_ms":1}"#]
        {
            var pair: [Int32] = [-1, -1]
            XCTAssertEqual(socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0, &pair), 0)
            defer { for fd in pair { close(fd) } }
            XCTAssertEqual(SocketIO.send(Array((bad + "\n").utf8), on: pair[0]), 0)
            var reader = LineReader(fd: pair[1])
            XCTAssertEqual(WebhookWorkerWire.Attempt.read(from: &reader), .unreadable(bytes: bad.utf8.count), bad)
        }
        let cut = attempt(1, body: "0123456789")
        send(Array(cut.frame.dropLast(3)))
        endInput()
        var reader = LineReader(fd: fds[1])
        XCTAssertEqual(WebhookWorkerWire.Attempt.read(from: &reader), .unreadable(bytes: cut.frame.count - cut.body.count - 1))
    }

    func test_answersRoundTripAndOtherLinesAreRefused() {
        for answer in [WebhookWorkerWire.Answer(n: 7, .status(204)), WebhookWorkerWire.Answer(n: 8, .failed("timed out after 1 s"))] {
            XCTAssertEqual(answer.line.last, 0x0A)
            XCTAssertEqual(WebhookWorkerWire.Answer(line: Array(answer.line.dropLast())), answer)
        }
        for bad in [#"{"n":1}"#, #"{"n":-1,"status":200}"#, "not json"] {
            XCTAssertNil(WebhookWorkerWire.Answer(line: Array(bad.utf8)), bad)
        }
    }

    /// The worker itself, in this process at normal priority: an unreadable attempt ends its
    /// input (where the next one starts is unknown) and it exits 1; the daemon then fails what
    /// it held and starts another.
    func test_theWorkerStopsAtAnUnreadableAttemptAndExitsOne() async {
        send(Array("{\"n\":1}\n".utf8) + attempt(2, body: "{}").frame)
        let status = await WebhookWorkerProcess.run(
            input: fds[1], output: fds[1], connectionsPerHost: 1, idle: false, drain: .milliseconds(100), logger: Logger(label: "test"))
        XCTAssertEqual(status, 1)
    }
}
