import SwitchboardProtocol
import Foundation
import SwitchboardCore
import XCTest

/// The default participant order: pinned, screensharing, dominant speaker, speaking,
/// publishing video, publishing audio, then user id (and session id).
final class ParticipantOrderTests: XCTestCase {
    private let cid = CallFixture.cid("default", "m")

    private func session(_ id: String, _ user: String, _ media: MediaState = MediaState()) -> SessionRecord {
        SessionRecord(
            sessionID: SessionID(id), cid: cid, callSession: 1, userID: CallFixture.user(user), connection: CallFixture.connection(user),
            role: .participant, joinedAt: CallFixture.base, media: media)
    }

    private func order(_ sessions: [SessionRecord], dominant: String? = nil) -> [String] {
        ParticipantOrder.sorted(sessions, dominant: dominant.map(SessionID.init)).map(\.sessionID.rawValue)
    }

    func test_eachCriterionOutranksEveryLaterOne() {
        let sessions = [
            session("plain", "a"),
            session("audio", "b", MediaState(audio: true)),
            session("video", "c", MediaState(audio: true, video: true)),
            session("speaking", "d", MediaState(audio: true, video: true, speaking: true, audioLevel: 0.9)),
            session("dominant", "e", MediaState()),
            session("screen", "f", MediaState(audio: true, video: true, screenshare: true, speaking: true)),
            session("pinned", "g", MediaState(pinned: true)),
        ]
        let expected = ["pinned", "screen", "dominant", "speaking", "video", "audio", "plain"]
        XCTAssertEqual(order(sessions, dominant: "dominant"), expected)
        XCTAssertEqual(order(sessions.reversed(), dominant: "dominant"), expected)
        XCTAssertEqual(order(sessions.shuffled(), dominant: "dominant"), expected)
    }

    func test_aPinnedParticipantWithNothingElseComesBeforeAScreensharingDominantSpeaker() {
        let sessions = [
            session("s1", "a", MediaState(audio: true, video: true, screenshare: true, speaking: true)),
            session("s2", "z", MediaState(pinned: true)),
        ]
        XCTAssertEqual(order(sessions, dominant: "s1"), ["s2", "s1"])
    }

    func test_theDominantSpeakerComesBeforeLouderSpeakers() {
        let sessions = [
            session("loud", "a", MediaState(speaking: true, audioLevel: 1)),
            session("quiet", "b", MediaState(speaking: true, audioLevel: 0.1)),
        ]
        XCTAssertEqual(order(sessions, dominant: "quiet"), ["quiet", "loud"])
        XCTAssertEqual(order(sessions), ["loud", "quiet"], "without a dominant speaker, speakers tie and go by user id")
    }

    func test_tiesGoByUserIdThenSessionId() {
        let sessions = [session("s3", "carol"), session("s2", "bob"), session("s9", "alice"), session("s1", "bob")]
        XCTAssertEqual(order(sessions), ["s9", "s1", "s2", "s3"])
    }

    func test_audioLevelAloneDoesNotRank() {
        let sessions = [session("s1", "b", MediaState(audioLevel: 0.9)), session("s2", "a")]
        XCTAssertEqual(order(sessions), ["s2", "s1"])
    }

    func test_precedesIsAStrictOrder() {
        let a = session("s1", "alice", MediaState(video: true))
        let b = session("s2", "bob")
        XCTAssertTrue(ParticipantOrder.precedes(a, b, dominant: nil))
        XCTAssertFalse(ParticipantOrder.precedes(b, a, dominant: nil))
        XCTAssertFalse(ParticipantOrder.precedes(a, a, dominant: nil))
        XCTAssertTrue(ParticipantOrder.precedes(b, a, dominant: SessionID("s2")))
    }
}
