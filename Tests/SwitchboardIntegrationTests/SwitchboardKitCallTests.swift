import Configuration
import Foundation
import SwitchboardTesting
import XCTest

@testable import SwitchboardKit

/// SwitchboardKit's meetings, resume, token refresh, lazy socket and daemon restarts against
/// the real daemon.
@MainActor
final class SwitchboardKitCallTests: XCTestCase {
    func test_aFourPartyMeetingSeesOneOrder() async throws {
        let daemon = try TestDaemon.calls()
        let users = ["ann", "ben", "cat", "dan"]
        var calls: [Call] = []
        var controllers: [CallController] = []
        for user in users {
            let client = try daemon.kitClient(user)
            let controller = client.makeCallController(callType: "default", callId: "standup")
            calls.append(try await controller.joinCall())
            controllers.append(controller)
        }
        await eventually("everyone sees four") { calls.allSatisfy { $0.participants.count == 4 } }
        // Dan speaks loudest: he becomes dominant and leads the order everywhere.
        try await controllers[3].updateParticipant(MediaUpdate(audio: true, speaking: true, audioLevel: 0.9))
        try await controllers[1].updateParticipant(MediaUpdate(video: true))
        await eventually("one order everywhere") {
            let orders = calls.map { $0.participants.map(\.userId) }
            return orders.allSatisfy { $0 == ["dan", "ben", "ann", "cat"] }
        }
        XCTAssertTrue(calls.allSatisfy { $0.dominantSpeaker == calls[3].ownSessionID })
        try await controllers[0].leave()
        await eventually("ann gone for the others") { calls[1...].allSatisfy { $0.participants.map(\.userId) == ["dan", "ben", "cat"] } }
        XCTAssertFalse(calls[0].isJoined)
        for controller in controllers { await controller.client.disconnect() }
    }

    func test_aDroppedSocketResumesWithNoEventLost() async throws {
        let daemon = try TestDaemon.calls()
        let alice = try daemon.kitClient("alice")
        let bob = try daemon.kitClient("bob")
        let aliceCall = try await alice.makeCallController(callType: "default", callId: "m").joinCall()
        let bobController = bob.makeCallController(callType: "default", callId: "m")
        _ = try await bobController.joinCall()
        await eventually("alice sees bob") { aliceCall.participants.count == 2 }
        let connection = await alice.connection?.connectionId
        var seen: [Int64] = []
        let events = await alice.events()
        let recorder = Task { @MainActor in
            for await event in events {
                if case .event(let event) = event { seen.append(event.seq) }
            }
        }

        await alice.dropSocket()
        await eventually("alice notices the drop") { await alice.connectionState != .connected }
        // While alice is away, bob publishes video and sends an event.
        try await bobController.updateParticipant(MediaUpdate(video: true))
        try await bobController.sendEvent(["reaction": "wave"])
        await eventually("alice back") { await alice.connectionState == .connected }
        let resumed = await alice.connection
        XCTAssertEqual(resumed?.connectionId, connection, "the same connection, resumed")
        XCTAssertEqual(resumed?.resumed, true)
        await eventually("alice got what she missed") {
            aliceCall.participants.first { $0.userId == "bob" }?.video == true && aliceCall.model.customEvents.count == 1
        }
        XCTAssertTrue(aliceCall.isJoined, "her session was kept")
        XCTAssertEqual(seen, seen.sorted())
        XCTAssertEqual(Set(seen).count, seen.count, "no event twice")
        recorder.cancel()
        await alice.disconnect()
        await bob.disconnect()
    }

    func test_aTokenExpiringDuringACallIsRefreshedThroughTheProvider() async throws {
        let daemon = try TestDaemon.calls(["connect.token_expiring_ms": .int(1500)])
        let provided = ProviderCount()
        let alice = try daemon.kitClient("alice", ttlSeconds: 2, provided: provided)
        let call = try await alice.makeCallController(callType: "default", callId: "t").joinCall()
        let expiry = await alice.connection?.expiresAt
        let firstExpiry = try XCTUnwrap(expiry)
        await eventually("the provider was asked once") { provided.count == 1 }
        // Past the first token's expiry the same socket still serves the call.
        let pastExpiry = Date(timeIntervalSince1970: Double(firstExpiry) / 1000 + 0.3)
        await eventually("past the first expiry", timeout: .seconds(6)) { Date() > pastExpiry }
        let state = try await alice.makeCallController(callType: "default", callId: "t").get()
        XCTAssertEqual(state.participants.map(\.userId), ["alice"])
        XCTAssertTrue(call.isJoined)
        let connected = await alice.connectionState
        XCTAssertEqual(connected, .connected)
        XCTAssertEqual(provided.count, 1, "one provider call per expiry")
        let connections = try daemon.connectionList()
        XCTAssertEqual(connections.count, 1, "no second connection: the token was swapped in place")
        await alice.disconnect()
    }

    func test_withoutAPersistentSocketTheClientConnectsOnlyForTheCall() async throws {
        let daemon = try TestDaemon.calls()
        let carol = try daemon.kitClient("carol", config: ClientConfig(persistingSocketConnection: false))
        let before = await carol.connectionState
        XCTAssertEqual(before, .disconnected)
        XCTAssertEqual(try daemon.connectionList().count, 0)
        let controller = carol.makeCallController(callType: "default", callId: "lazy")
        let call = try await controller.joinCall()
        XCTAssertTrue(call.isJoined)
        XCTAssertEqual(try daemon.connectionList().count, 1)
        try await controller.leave()
        await eventually("closed when idle") { await carol.connectionState == .disconnected }
        await eventually("the daemon sees it detached") { (try? daemon.connectionList().first?["attached"] as? Bool) == false }
    }

    func test_aDaemonRestartMidCallAndTheClientCarriesOn() async throws {
        let port = try freePort()
        let daemon = try TestDaemon.calls(["server.port": .int(port)])
        let alice = try daemon.kitClient("alice")
        let bob = try daemon.kitClient("bob")
        let aliceCall = try await alice.makeCallController(callType: "default", callId: "r").joinCall()
        let bobController = bob.makeCallController(callType: "default", callId: "r")
        _ = try await bobController.joinCall()
        await eventually("two in the call") { aliceCall.participants.count == 2 }

        try daemon.restart()
        XCTAssertEqual(daemon.port, port)
        await eventually("both reconnected", timeout: .seconds(10)) {
            let states = [await alice.connectionState, await bob.connectionState]
            return states == [.connected, .connected]
        }
        let resumed = await alice.connection?.resumed
        XCTAssertEqual(resumed, true, "the connection on record was resumed after the restart")
        // The call carries on: bob's update reaches alice.
        try await bobController.updateParticipant(MediaUpdate(audio: true))
        await eventually("alice sees bob's audio") { aliceCall.participants.first { $0.userId == "bob" }?.audio == true }
        XCTAssertTrue(aliceCall.isJoined)
        XCTAssertEqual(aliceCall.participants.count, 2)
        await alice.disconnect()
        await bob.disconnect()
    }

    /// A port the kernel has just handed out and released (the test binds it again at once).
    func freePort() throws -> Int {
        let probe = try TestDaemon.calls()
        let port = probe.port
        probe.stop()
        return port
    }
}
