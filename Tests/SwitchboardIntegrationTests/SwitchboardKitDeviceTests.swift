import Foundation
import SwitchboardKit
import XCTest

/// SwitchboardKit's push devices (`device.*`) against the real daemon.
final class SwitchboardKitDeviceTests: XCTestCase {
    static let voipToken = "5f2b9c0e7a41d3886b0f1e2d4c6a8b9e0f1a2b3c4d5e6f708192a3b4c5d6e7f8"

    func test_registerListUnregisterAndTheCap() async throws {
        let daemon = try TestDaemon.calls(["calls.devices_per_user": .int(2)])
        let bob = try daemon.kitClient("bob")
        let alice = try daemon.kitClient("alice")
        try await bob.connect()

        let voip = try await bob.registerDevice(provider: .apnsVoIP, token: Self.voipToken)
        XCTAssertEqual(voip.userId, "bob")
        XCTAssertEqual(voip.provider, .apnsVoIP)
        XCTAssertEqual(voip.token, Self.voipToken)
        XCTAssertEqual(voip.deviceId.count, 24)
        XCTAssertGreaterThan(voip.createdAt, 1_700_000_000_000)
        let fcm = try await bob.registerDevice(provider: .fcm, token: "fcm-token-1")
        var listed = try await bob.devices()
        XCTAssertEqual(listed, [voip, fcm], "oldest first")
        let stored = try daemon.adminGET("/v1/users/bob/devices")["devices"] as? [[String: Any]]
        XCTAssertEqual(stored?.compactMap { $0["device_id"] as? String }, [voip.deviceId, fcm.deviceId], "the admin API shows the same devices")

        // Bob is at the cap: a third is refused, re-registering one of his is not.
        do {
            try await bob.registerDevice(provider: .webpush, token: #"{"endpoint":"https://push.example.net/x"}"#)
            XCTFail("a third device is over the cap of 2")
        } catch {
            XCTAssertEqual(error.code, .tooManyDevices)
            XCTAssertEqual(error.code.rawValue, "too_many_devices")
            XCTAssertFalse(error.isRetryable)
        }
        let again = try await bob.registerDevice(provider: .fcm, token: "fcm-token-1")
        XCTAssertEqual(again.deviceId, fcm.deviceId)

        try await bob.unregisterDevice(provider: .apnsVoIP, token: Self.voipToken)
        listed = try await bob.devices()
        XCTAssertEqual(listed.map(\.deviceId), [fcm.deviceId])
        do {
            try await bob.unregisterDevice(provider: .apnsVoIP, token: Self.voipToken)
            XCTFail("the device is gone")
        } catch {
            XCTAssertEqual(error.code, .notFound)
        }
        // The freed place takes a new device; another user's devices are their own.
        _ = try await bob.registerDevice(provider: .apns, token: "apns-token-1")
        let bobs = try await bob.devices()
        XCTAssertEqual(bobs.map(\.provider), [.fcm, .apns])
        let alices = try await alice.devices()
        XCTAssertEqual(alices, [], "alice (connected by the request) has none")
        await bob.disconnect()
        await alice.disconnect()
    }

    func test_withoutAPersistingSocketARegisterConnectsThenCloses() async throws {
        let daemon = try TestDaemon.calls()
        let config = ClientConfig(persistingSocketConnection: false, backoff: Backoff(base: .milliseconds(20), maximum: .milliseconds(200)))
        let carol = try daemon.kitClient("carol", config: config)
        let device = try await carol.registerDevice(provider: .fcm, token: "fcm-token-carol")
        XCTAssertEqual(device.userId, "carol")
        let state = await carol.connectionState
        XCTAssertEqual(state, .disconnected, "no call needs the socket")
        let listed = try await carol.devices()
        XCTAssertEqual(listed, [device], "the next request connects again")
        await carol.disconnect()
    }
}
