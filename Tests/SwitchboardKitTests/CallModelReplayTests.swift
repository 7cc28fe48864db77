import SwitchboardProtocol
import XCTest

@testable import SwitchboardKit

/// The state logic against conversations recorded from the real daemon.
final class CallModelReplayTests: XCTestCase {
    func index(_ transcript: Transcript, _ conn: String, _ type: String, reason: String? = nil, after start: Int = 0) throws -> Int {
        let found = transcript.entries.indices.first { index in
            let entry = transcript.entries[index]
            return index >= start && entry.conn == conn && !entry.sent && entry.frame["type"]?.stringValue == type
                && (reason == nil || entry.frame["data"]?["reason"]?.stringValue == reason)
        }
        return try XCTUnwrap(found, "no \(type) for \(conn)")
    }

    func cid(_ transcript: Transcript, of conn: String, _ type: String) throws -> String {
        try XCTUnwrap(transcript.entries[try index(transcript, conn, type)].frame["call_cid"]?.stringValue)
    }

    func test_aRingingCallFromRingToEndKeepsTheServersState() throws {
        let transcript = try Transcript("ringing-flow")
        let cid = try cid(transcript, of: "bob", "call.ring")
        let replayer = Replayer()

        // Bob is rung by alice.
        try replayer.play(transcript, through: try index(transcript, "bob", "call.ring"))
        XCTAssertEqual(replayer.model("bob", cid).incomingRing?.from, "alice")
        XCTAssertEqual(replayer.model("bob", cid).member("bob")?.ringState, .ringing)
        XCTAssertFalse(replayer.model("bob", cid).isJoined)

        // Alice hears bob accept.
        let accepted = try index(transcript, "alice", "call.accepted")
        try replayer.play(Transcript("ringing-flow"), through: accepted)
        let alice = replayer.model("alice", cid)
        XCTAssertEqual(alice.member("bob")?.ringState, .accepted)
        XCTAssertEqual(alice.info?.createdBy, "alice")

        // Both joined; every state answer afterwards equals what the events built.
        let replayAll = Replayer()
        try replayAll.play(transcript)
        XCTAssertEqual(replayAll.mismatches, [])
        let ended = replayAll.model("alice", cid)
        XCTAssertEqual(ended.endedReason, "ended_by_user")
        XCTAssertTrue(ended.isEnded)
        XCTAssertEqual(ended.participants, [])
        XCTAssertFalse(ended.isJoined)
        XCTAssertEqual(ended.customEvents.first?["custom"]?["reaction"], "wave")
        XCTAssertEqual(ended.members.map(\.userId), ["alice", "bob", "carol"], "carol was invited")
    }

    func test_participantsStayInTheDefaultOrderAfterEveryKindOfUpdate() throws {
        let transcript = try Transcript("ringing-flow")
        let cid = try cid(transcript, of: "bob", "call.ring")
        var checked = 0
        // After each participant event alice received: the model's order is the shared rule's
        // order of the same participants, and the dominant-speaker flags agree with the call.
        for (position, entry) in transcript.entries.enumerated() where entry.conn == "alice" && !entry.sent {
            guard let type = entry.frame["type"]?.stringValue, type.hasPrefix("call.participant") || type == "call.dominant_speaker_changed" else { continue }
            let replayer = Replayer()
            try replayer.play(transcript, through: position)
            let model = replayer.model("alice", cid)
            XCTAssertEqual(model.participants, ParticipantOrder.sorted(model.participants, dominant: model.dominantSpeaker), "after \(type)")
            XCTAssertEqual(model.participants.filter(\.dominantSpeaker).map(\.sessionId), model.dominantSpeaker.map { [$0] } ?? [], "after \(type)")
            checked += 1
        }
        XCTAssertGreaterThanOrEqual(checked, 8, "joined, updated (audio, video, screenshare, pinned, speaking), dominant, left")

        // The pinned participant leads once alice pins herself; the screensharer comes next.
        let pinned = transcript.entries.indices.first { transcript.entries[$0].sent && transcript.entries[$0].frame["data"]?["pinned"] == true }
        let replayer = Replayer()
        try replayer.play(transcript, through: try index(transcript, "alice", "call.participant_updated", after: try XCTUnwrap(pinned)))
        let order = replayer.model("alice", cid).participants
        XCTAssertEqual(order.map(\.userId), ["alice", "bob"])
        XCTAssertTrue(order[0].pinned)
        XCTAssertTrue(order[1].screenshare)
    }

    func test_rejectCancelAndAcceptedElsewhere() throws {
        let transcript = try Transcript("reject-cancel-elsewhere")
        let replayer = Replayer()
        try replayer.play(transcript)
        XCTAssertEqual(replayer.mismatches, [])
        let cids = transcript.entries.compactMap { $0.conn == "alice" && !$0.sent && $0.frame["type"] == "call.ended" ? $0.frame["call_cid"]?.stringValue : nil }
        XCTAssertEqual(cids.count, 3)

        // Declined: alice sees bob rejected (decline), then the call ends all_rejected.
        let declined = replayer.model("alice", cids[0])
        XCTAssertEqual(declined.member("bob")?.ringState, .rejected)
        XCTAssertEqual(declined.member("bob")?.ringReason, "decline")
        XCTAssertEqual(declined.endedReason, "all_rejected")
        XCTAssertNil(replayer.model("bob2", cids[0]).incomingRing, "bob's other device stops ringing")

        // Cancelled by alice: both of bob's devices stop ringing.
        for conn in ["bob", "bob2"] {
            XCTAssertNil(replayer.model(conn, cids[1]).incomingRing, conn)
            XCTAssertEqual(replayer.model(conn, cids[1]).member("bob")?.ringState, .rejected, conn)
        }

        // Accepted on bob's first device: the second stops ringing (accepted_elsewhere); the call
        // ends initiator_left when alice leaves.
        XCTAssertNil(replayer.model("bob2", cids[2]).incomingRing)
        XCTAssertEqual(replayer.model("bob2", cids[2]).member("bob")?.ringState, .accepted)
        XCTAssertEqual(replayer.model("bob", cids[2]).endedReason, "initiator_left")
        XCTAssertFalse(replayer.model("bob", cids[2]).isJoined)
    }
}
