import Foundation
import SwitchboardCore
import XCTest

/// The dominant speaker with hysteresis, on its own.
final class DominantSpeakerTests: XCTestCase {
    private let cid = CallFixture.cid("default", "m")
    private let hold = Duration.milliseconds(1500)
    private var sessions: [SessionID: SessionRecord] = [:]
    private var speaker = DominantSpeaker()

    override func setUp() {
        super.setUp()
        for (id, user) in [("s1", "alice"), ("s2", "bob"), ("s3", "carol")] {
            sessions[SessionID(id)] = SessionRecord(
                sessionID: SessionID(id), cid: cid, callSession: 1, userID: CallFixture.user(user), connection: CallFixture.connection(user),
                role: .participant, joinedAt: CallFixture.base)
        }
        speaker = DominantSpeaker()
    }

    private func speak(_ id: String, _ level: Double, speaking: Bool = true) {
        sessions[SessionID(id)]?.media.speaking = speaking
        sessions[SessionID(id)]?.media.audioLevel = level
    }

    /// Re-evaluates at `seconds` after the base; returns whether the holder changed.
    private func update(at seconds: TimeInterval) -> Bool {
        speaker.update(sessions: sessions, now: CallFixture.at(seconds), hold: hold)
    }

    func test_nobodySpeakingMeansNoDominantSpeaker() {
        XCTAssertFalse(update(at: 0))
        XCTAssertNil(speaker.current)
        speak("s1", 0.9, speaking: false)
        XCTAssertFalse(update(at: 0))
        XCTAssertNil(speaker.current)
    }

    func test_theFirstSpeakerTakesTheFloorAtOnce() {
        speak("s2", 0.2)
        XCTAssertTrue(update(at: 0))
        XCTAssertEqual(speaker.current, SessionID("s2"))
        XCTAssertFalse(update(at: 0.1), "no change, no report")
    }

    func test_aLouderChallengerWinsOnlyAfterLeadingForTheHold() {
        speak("s1", 0.5)
        XCTAssertTrue(update(at: 0))
        speak("s2", 0.8)
        XCTAssertFalse(update(at: 1))
        XCTAssertFalse(update(at: 2.25))
        XCTAssertEqual(speaker.current, SessionID("s1"))
        XCTAssertTrue(update(at: 2.5))
        XCTAssertEqual(speaker.current, SessionID("s2"))
    }

    func test_aChallengerThatFallsBehindStartsItsHoldAgain() {
        speak("s1", 0.5)
        _ = update(at: 0)
        speak("s2", 0.8)
        _ = update(at: 1)
        speak("s2", 0.3)
        XCTAssertFalse(update(at: 2))
        speak("s2", 0.8)
        XCTAssertFalse(update(at: 2.25))
        XCTAssertFalse(update(at: 3.5), "the lead restarted at 2.25")
        XCTAssertTrue(update(at: 3.75))
        XCTAssertEqual(speaker.current, SessionID("s2"))
    }

    func test_aNewLoudestChallengerRestartsTheHold() {
        speak("s1", 0.5)
        _ = update(at: 0)
        speak("s2", 0.7)
        _ = update(at: 1)
        speak("s3", 0.9)
        XCTAssertFalse(update(at: 2))
        XCTAssertFalse(update(at: 3))
        XCTAssertTrue(update(at: 3.5))
        XCTAssertEqual(speaker.current, SessionID("s3"))
    }

    func test_whenTheHolderStopsSpeakingTheLoudestTakesOverAtOnce() {
        speak("s1", 0.5)
        _ = update(at: 0)
        speak("s2", 0.3)
        speak("s3", 0.4)
        XCTAssertFalse(update(at: 0.1))
        speak("s1", 0, speaking: false)
        XCTAssertTrue(update(at: 0.2))
        XCTAssertEqual(speaker.current, SessionID("s3"))
    }

    func test_aSilentHolderKeepsTheFloorUntilSomeoneSpeaks() {
        speak("s1", 0.5)
        _ = update(at: 0)
        speak("s1", 0, speaking: false)
        XCTAssertFalse(update(at: 5))
        XCTAssertEqual(speaker.current, SessionID("s1"))
    }

    func test_aHolderWhoLeavesIsReplacedOrCleared() {
        speak("s1", 0.5)
        speak("s2", 0.4)
        _ = update(at: 0)
        sessions[SessionID("s1")] = nil
        XCTAssertTrue(update(at: 0.1))
        XCTAssertEqual(speaker.current, SessionID("s2"))
        sessions[SessionID("s2")] = nil
        XCTAssertTrue(update(at: 0.2))
        XCTAssertNil(speaker.current)
    }

    func test_equalLevelsGoToTheSmallerSessionId() {
        speak("s3", 0.5)
        speak("s2", 0.5)
        XCTAssertTrue(update(at: 0))
        XCTAssertEqual(speaker.current, SessionID("s2"))
    }

    func test_durationSeconds() {
        XCTAssertEqual(Duration.milliseconds(1500).seconds, 1.5)
        XCTAssertEqual(Duration.seconds(30).seconds, 30)
    }
}
