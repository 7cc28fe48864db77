import Configuration
import Foundation
import SwitchboardKit
import SwitchboardTesting
import XCTest

/// SwitchboardKit's ringing flows (CallViewModel) against the real daemon.
@MainActor
final class SwitchboardKitRingingTests: XCTestCase {
    func test_ringAcceptTalkAndHangUp() async throws {
        let daemon = try TestDaemon.calls()
        let alice = CallViewModel(client: try daemon.kitClient("alice"))
        let bob = CallViewModel(client: try daemon.kitClient("bob"))
        try await alice.client.connect()
        try await bob.client.connect()

        await alice.startCall(callType: "ringing", callId: "r1", members: ["bob"])
        XCTAssertEqual(alice.callingState, .outgoing)
        await eventually("bob rung") { bob.callingState == .incoming(IncomingCall(callID: CallID(type: "ringing", id: "r1"), caller: "alice")) }

        await bob.acceptCall()
        XCTAssertEqual(bob.callingState, .inCall)
        XCTAssertNil(bob.lastError)
        // Alice joins when she hears bob accept.
        await eventually("alice in the call") { alice.callingState == .inCall }
        await eventually("both see two participants") { alice.call?.participants.count == 2 && bob.call?.participants.count == 2 }
        XCTAssertEqual(alice.call?.participants.map(\.sessionId), bob.call?.participants.map(\.sessionId), "one order on both sides")

        // Media state travels: bob mutes, alice sees it.
        await bob.toggleMicrophone()
        XCTAssertFalse(bob.microphoneOn)
        await bob.toggleMicrophone()
        await eventually("alice sees bob's audio on") { alice.call?.participants.first { $0.userId == "bob" }?.audio == true }

        await alice.hangUp()
        XCTAssertEqual(alice.callingState, .idle)
        await eventually("bob back to idle") { bob.callingState == .idle }
        XCTAssertEqual(bob.lastOutcome, "ended_by_user")
        await alice.client.disconnect()
        await bob.client.disconnect()
    }

    func test_rejectBusyAndCancel() async throws {
        let daemon = try TestDaemon.calls()
        let alice = CallViewModel(client: try daemon.kitClient("alice"))
        let bob = CallViewModel(client: try daemon.kitClient("bob"))
        let carol = CallViewModel(client: try daemon.kitClient("carol"))
        for model in [alice, bob, carol] { try await model.client.connect() }

        // Declined.
        await alice.startCall(callType: "ringing", callId: "d1", members: ["bob"])
        await eventually("bob rung") { if case .incoming = bob.callingState { true } else { false } }
        await bob.rejectCall()
        XCTAssertEqual(bob.callingState, .idle)
        await eventually("alice hears the decline, then the end") { alice.lastOutcome == "all_rejected" }
        XCTAssertEqual(alice.callingState, .idle)
        let declined = await alice.client.call(CallID(type: "ringing", id: "d1"))
        XCTAssertEqual(declined.members.first { $0.userId == "bob" }?.ringState, .rejected)
        XCTAssertEqual(declined.members.first { $0.userId == "bob" }?.ringReason, "decline")

        // Busy: carol is in a meeting, so the ringing type rejects her at once.
        _ = try await carol.client.makeCallController(callType: "default", callId: "standup").joinCall()
        await alice.startCall(callType: "ringing", callId: "b1", members: ["carol"])
        await eventually("alice hears busy") { alice.lastOutcome == "all_rejected" }
        XCTAssertEqual(alice.callingState, .idle)
        let busy = await alice.client.call(CallID(type: "ringing", id: "b1"))
        XCTAssertEqual(busy.members.first { $0.userId == "carol" }?.ringReason, "busy")
        XCTAssertEqual(carol.callingState, .idle, "a busy callee is never rung")

        // Cancelled: alice hangs up while bob's phone rings.
        await alice.startCall(callType: "ringing", callId: "c1", members: ["bob"])
        await eventually("bob rung again") { if case .incoming = bob.callingState { true } else { false } }
        await alice.hangUp()
        XCTAssertEqual(alice.callingState, .idle)
        await eventually("bob stops ringing") { bob.callingState == .idle }
        XCTAssertEqual(bob.lastOutcome, "cancelled")
        for model in [alice, bob, carol] { await model.client.disconnect() }
    }

    func test_anUnansweredRingIsMissed() async throws {
        let clock = ManualWallClock()
        let daemon = try TestDaemon.calls(wallClock: clock)
        let alice = CallViewModel(client: try daemon.kitClient("alice"))
        let bob = CallViewModel(client: try daemon.kitClient("bob"))
        try await alice.client.connect()
        try await bob.client.connect()
        await alice.startCall(callType: "ringing", callId: "m1", members: ["bob"])
        await eventually("bob rung") { if case .incoming = bob.callingState { true } else { false } }
        daemon.advance(by: .seconds(31))
        await eventually("bob's ring timed out") { bob.callingState == .idle }
        await eventually("alice hears no answer") { alice.callingState == .idle }
        XCTAssertEqual(alice.lastOutcome, "no_answer")
        let missed = await bob.client.call(CallID(type: "ringing", id: "m1"))
        XCTAssertEqual(missed.members.first { $0.userId == "bob" }?.ringState, .missed)
        await alice.client.disconnect()
        await bob.client.disconnect()
    }
}
