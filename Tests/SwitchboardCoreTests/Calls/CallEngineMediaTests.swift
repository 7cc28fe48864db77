import Foundation
import SwitchboardCore
import XCTest

/// `call.update_participant`, the dominant speaker, `call.send_event` and `signal.send`.
final class CallEngineMediaTests: XCTestCase {
    let meeting = CallFixture.cid("default", "standup")
    let other = CallFixture.cid("default", "other")
    let alice = CallFixture.actor("alice")
    let bob = CallFixture.actor("bob")
    let carol = CallFixture.actor("carol")

    /// alice (s-1) and bob (s-2) in the meeting.
    private func twoInAMeeting() throws -> EngineHarness {
        var h = EngineHarness()
        try h.join(meeting, by: alice, create: true)
        try h.join(meeting, by: bob)
        return h
    }

    // MARK: update_participant

    func test_publishingAudioIsSavedAndToldToEveryParticipant() throws {
        var h = try twoInAMeeting()
        let participant = try h.update(meeting, MediaUpdate(audio: true), by: bob)

        XCTAssertEqual(participant["audio"], .bool(true))
        XCTAssertEqual(participant["video"], .bool(false))
        XCTAssertEqual(participant["session_id"], .string("s-2"))
        let updated = try XCTUnwrap(h.last.notice("call.participant_updated"))
        XCTAssertEqual(updated.connections, [alice.connection, bob.connection])
        XCTAssertEqual(updated.data["participant"], participant)
        XCTAssertEqual(updated.data["call_cid"], .string("default:standup"))
        XCTAssertEqual(h.last.savedSessions.map(\.media), [MediaState(audio: true)])
        XCTAssertEqual(h.last.mutations.count, 1)
        XCTAssertEqual(h.call(meeting)?.sessions[SessionID("s-2")]?.media.audio, true)
    }

    func test_videoScreenshareAndPinAreSavedToo() throws {
        var h = try twoInAMeeting()
        try h.update(meeting, MediaUpdate(video: true), by: bob)
        XCTAssertEqual(h.last.savedSessions.count, 1)
        try h.update(meeting, MediaUpdate(screenshare: true), by: bob)
        XCTAssertEqual(h.last.savedSessions.count, 1)
        try h.update(meeting, MediaUpdate(pinned: true), by: bob)
        XCTAssertEqual(h.last.savedSessions.first?.media, MediaState(video: true, screenshare: true, pinned: true))
    }

    func test_speakingAndAudioLevelAreToldButNotSaved() throws {
        var h = try twoInAMeeting()
        try h.update(meeting, MediaUpdate(speaking: true, audioLevel: 0.4), by: bob)
        XCTAssertTrue(h.last.savedSessions.isEmpty)
        XCTAssertEqual(h.last.noticeTypes, ["call.dominant_speaker_changed", "call.participant_updated"])

        try h.update(meeting, MediaUpdate(audioLevel: 0.7), by: bob)
        XCTAssertTrue(h.last.mutations.isEmpty)
        XCTAssertEqual(h.last.noticeTypes, ["call.participant_updated"])
        XCTAssertEqual(h.last.notice("call.participant_updated")?.data["participant"]?["audio_level"], .number(0.7))
        XCTAssertEqual(h.call(meeting)?.sessions[SessionID("s-2")]?.media, MediaState(speaking: true, audioLevel: 0.7))
    }

    func test_anUpdateThatChangesNothingTellsNobody() throws {
        var h = try twoInAMeeting()
        try h.update(meeting, MediaUpdate(audio: true), by: bob)
        let participant = try h.update(meeting, MediaUpdate(audio: true), by: bob)
        XCTAssertTrue(h.last.isEmpty)
        XCTAssertEqual(participant["audio"], .bool(true))
    }

    func test_updatesNeedOwnSession() throws {
        var h = try twoInAMeeting()
        assertCallError(.notAMember) { try h.update(meeting, MediaUpdate(audio: true), by: carol) }
        assertCallError(.sessionNotFound) { try h.update(meeting, MediaUpdate(audio: true), session: SessionID("s-1"), by: bob) }
        try h.join(meeting, by: bob)
        assertCallError(.invalidRequest) { try h.update(meeting, MediaUpdate(audio: true), by: bob) }
        try h.update(meeting, MediaUpdate(audio: true), session: SessionID("s-3"), by: bob)
        XCTAssertEqual(h.call(meeting)?.sessions[SessionID("s-3")]?.media.audio, true)
        XCTAssertEqual(h.call(meeting)?.sessions[SessionID("s-2")]?.media.audio, false)
    }

    // MARK: Dominant speaker

    func test_aLouderSpeakerTakesOverOnlyAfterTheHoldWhileTheCurrentOneStillSpeaks() throws {
        var h = try twoInAMeeting()
        try h.update(meeting, MediaUpdate(speaking: true, audioLevel: 0.5), by: alice)
        let first = try XCTUnwrap(h.last.notice("call.dominant_speaker_changed"))
        XCTAssertEqual(first.data["session_id"], .string("s-1"))
        XCTAssertEqual(first.data["user_id"], .string("alice"))
        XCTAssertEqual(first.connections, [alice.connection, bob.connection])
        XCTAssertEqual(h.last.loggedEvents, ["call.dominant_speaker_changed"])
        XCTAssertEqual(h.last.notice("call.participant_updated")?.data["participant"]?["dominant_speaker"], .bool(true))

        h.advance(0.5)
        try h.update(meeting, MediaUpdate(speaking: true, audioLevel: 0.9), by: bob)
        XCTAssertTrue(h.last.notices("call.dominant_speaker_changed").isEmpty)
        h.advance(1)
        try h.update(meeting, MediaUpdate(audioLevel: 0.8), by: bob)
        XCTAssertTrue(h.last.notices("call.dominant_speaker_changed").isEmpty)
        XCTAssertEqual(h.call(meeting)?.dominant.current, SessionID("s-1"))

        h.advance(0.5)
        try h.update(meeting, MediaUpdate(audioLevel: 0.85), by: bob)
        let second = try XCTUnwrap(h.last.notice("call.dominant_speaker_changed"))
        XCTAssertEqual(second.data["session_id"], .string("s-2"))
        XCTAssertEqual(second.data["user_id"], .string("bob"))
        XCTAssertEqual(h.call(meeting)?.json["dominant_speaker"], .string("s-2"))
    }

    func test_whenTheDominantSpeakerStopsTheLoudestOtherTakesOverAtOnce() throws {
        var h = try twoInAMeeting()
        try h.update(meeting, MediaUpdate(speaking: true, audioLevel: 0.9), by: bob)
        h.advance(0.1)
        try h.update(meeting, MediaUpdate(speaking: true, audioLevel: 0.3), by: alice)
        XCTAssertEqual(h.call(meeting)?.dominant.current, SessionID("s-2"))

        h.advance(0.1)
        try h.update(meeting, MediaUpdate(speaking: false, audioLevel: 0), by: bob)
        XCTAssertEqual(h.last.notice("call.dominant_speaker_changed")?.data["session_id"], .string("s-1"))
    }

    func test_whenTheDominantSpeakerLeavesAndNobodySpeaksThereIsNone() throws {
        var h = try twoInAMeeting()
        try h.update(meeting, MediaUpdate(speaking: true, audioLevel: 0.9), by: bob)
        try h.leave(meeting, by: bob)
        let changed = try XCTUnwrap(h.last.notice("call.dominant_speaker_changed"))
        XCTAssertEqual(changed.data["session_id"], .null)
        XCTAssertEqual(changed.data["user_id"], .null)
        XCTAssertEqual(changed.connections, [alice.connection])
        XCTAssertNil(h.call(meeting)?.dominant.current)
    }

    // MARK: send_event

    func test_customEventsGoToEveryParticipant() throws {
        var h = try twoInAMeeting()
        h.last = CallOutput()
        let custom = JSONValue.object(["emoji": .string("tada")])
        let result = try h.engine.sendEvent(meeting, custom: custom, by: bob, now: h.now, out: &h.last)
        XCTAssertEqual(result, .object([:]))
        let notice = try XCTUnwrap(h.last.notice("call.custom"))
        XCTAssertEqual(notice.connections, [alice.connection, bob.connection])
        XCTAssertEqual(notice.data["custom"], custom)
        XCTAssertEqual(notice.data["user_id"], .string("bob"))
        XCTAssertEqual(notice.data["created_at"], .time(CallFixture.base))
        XCTAssertEqual(h.last.loggedEvents, ["call.custom"])

        var out = CallOutput()
        assertCallError(.notAMember) { try h.engine.sendEvent(meeting, custom: custom, by: carol, now: h.now, out: &out) }
        XCTAssertTrue(out.isEmpty)
    }

    // MARK: signal.send

    func test_aSignalReachesOnlyTheTargetSessionsConnectionStampedWithTheSender() throws {
        var h = try twoInAMeeting()
        try h.join(meeting, by: carol)
        let payload = JSONValue.object(["sdp": .string("v=0\r\n")])
        let result = try h.signal(to: SessionID("s-2"), kind: .offer, payload: payload, by: alice)

        XCTAssertEqual(result, .object(["delivered_to": .string("s-2")]))
        XCTAssertEqual(h.last.noticeTypes, ["signal"])
        let signal = try XCTUnwrap(h.last.notice("signal"))
        XCTAssertEqual(signal.connections, [bob.connection])
        XCTAssertTrue(signal.users.isEmpty)
        XCTAssertEqual(
            signal.data,
            .object([
                "call_cid": .string("default:standup"), "from_session": .string("s-1"), "from_user": .string("alice"),
                "to_session": .string("s-2"), "kind": .string("offer"), "payload": payload,
            ]))
        XCTAssertTrue(h.last.mutations.isEmpty)
    }

    func test_signalingASessionOfAnotherCallIsForbidden() throws {
        var h = try twoInAMeeting()
        try h.join(other, by: carol, create: true)
        assertCallError(.forbidden) { try h.signal(to: SessionID("s-2"), by: carol) }
        assertCallError(.forbidden) { try h.signal(to: SessionID("s-2"), by: CallFixture.actor("dave")) }
        assertCallError(.forbidden) { try h.signal(from: SessionID("s-3"), to: SessionID("s-2"), by: alice) }
        XCTAssertTrue(h.last.isEmpty)
    }

    func test_aTokenLimitedToOtherCallsMayNotSignal() throws {
        var h = try twoInAMeeting()
        let limited = CallFixture.actor("alice", cids: ["default:other"])
        assertCallError(.forbidden) { try h.signal(to: SessionID("s-2"), by: limited) }
    }

    func test_signalingAnUnknownSessionIsSessionNotFound() throws {
        var h = try twoInAMeeting()
        assertCallError(.sessionNotFound) { try h.signal(to: SessionID("s-99"), kind: .candidate, by: alice) }
        try h.leave(meeting, by: bob)
        assertCallError(.sessionNotFound) { try h.signal(to: SessionID("s-2"), by: alice) }
        XCTAssertTrue(h.last.isEmpty)
    }
}
