import Foundation
import XCTest

@testable import SwitchboardKit

/// An answer's call state is applied where it sits among the frames: an event the server sent
/// after the answer is applied after it, never overwritten by it. (The caller resumes later than
/// the reader takes the next frame; applying the answer there lost participants, seen as a flaky
/// SwitchboardKitRingingTests run in which bob never saw alice join.)
final class AnswerOrderTests: XCTestCase {
    /// Bob's side of the recorded ringing flow: he joins, and alice's join event is the next frame.
    func test_anEventReadRightAfterAJoinAnswerIsApplied() async throws {
        let received = try BobsFrames(Transcript("ringing-flow"), answering: "call.join")
        let client = SwitchboardClient(
            url: URL(string: "ws://127.0.0.1:1/v1/connect")!, user: UserInfo(id: "bob"), token: UserToken(rawValue: "t"),
            tokenProvider: { UserToken(rawValue: "t") })
        let sent = await client.attachForTesting()
        for frame in received.before { await client.received(frame) }

        let controller = client.makeCallController(callType: received.callID.type, callId: received.callID.id)
        let join = Task { try await controller.joinCall(create: false) }
        let id = try await sent.nextRequestID()
        // The reader takes the answer, then the event, before the caller has resumed.
        await client.received(received.answer(id: id))
        await client.received(received.eventAfter)
        let call = await controller.call()
        let atOnce = await MainActor.run { call.participants.map(\.userId).sorted() }
        XCTAssertEqual(atOnce, ["alice", "bob"], "the answer's participants, then alice's join")

        _ = try await join.value
        let afterwards = await MainActor.run { (call.participants.map(\.userId).sorted(), call.isJoined) }
        XCTAssertEqual(afterwards.0, ["alice", "bob"], "the caller's return does not apply the older answer again")
        XCTAssertTrue(afterwards.1)
    }
}

/// The frames bob received in a transcript: those before his request of type `answering`, its
/// answer, and the event right after the answer.
private struct BobsFrames {
    let before: [String]
    let answerFrame: JSONValue
    let eventAfter: String
    let callID: CallID

    init(_ transcript: Transcript, answering type: String) throws {
        let bob = transcript.entries.filter { $0.conn == "bob" }
        let request = try XCTUnwrap(bob.firstIndex { $0.sent && $0.frame["type"]?.stringValue == type })
        let requestID = try XCTUnwrap(bob[request].frame["id"])
        let answer = try XCTUnwrap(bob[request...].firstIndex { !$0.sent && $0.frame["id"] == requestID })
        let event = try XCTUnwrap(bob[(answer + 1)...].first { !$0.sent && $0.frame["seq"] != nil })
        before = bob[..<request].filter { !$0.sent }.map(\.text)
        answerFrame = bob[answer].frame
        eventAfter = event.text
        XCTAssertEqual(event.frame["type"]?.stringValue, "call.participant_joined")
        let data = try XCTUnwrap(bob[request].frame["data"])
        callID = CallID(type: try XCTUnwrap(data["type"]?.stringValue), id: try XCTUnwrap(data["id"]?.stringValue))
    }

    /// The answer as an answer to request `id`.
    func answer(id: Int) -> String {
        guard case .object(var fields) = answerFrame else { return Wire.encode(answerFrame) }
        fields["id"] = .number(Double(id))
        return Wire.encode(.object(fields))
    }
}

extension SwitchboardClient {
    /// A socket of the test's own: the client is connected, and what it sends is returned.
    fileprivate func attachForTesting() -> SentFrames {
        let (stream, continuation) = AsyncStream<Outbound>.makeStream()
        outbound = continuation
        setState(.connected)
        return SentFrames(iterator: stream.makeAsyncIterator())
    }
}

/// What the client wrote to its socket.
private final class SentFrames: @unchecked Sendable {
    // Read by one test task only.
    var iterator: AsyncStream<SwitchboardClient.Outbound>.AsyncIterator

    init(iterator: AsyncStream<SwitchboardClient.Outbound>.AsyncIterator) {
        self.iterator = iterator
    }

    /// The id of the next request the client sends.
    func nextRequestID() async throws -> Int {
        while let frame = await iterator.next() {
            guard case .text(let text) = frame, let json = try? JSONDecoder().decode(JSONValue.self, from: Data(text.utf8)) else { continue }
            if let id = json["id"]?.int64Value { return Int(id) }
        }
        throw CancellationError()
    }
}
