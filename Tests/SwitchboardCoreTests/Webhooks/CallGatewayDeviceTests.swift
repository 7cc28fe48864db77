import Foundation
import SwitchboardCore
import XCTest

/// `device.register`, `device.unregister` and `device.list`: one rule for the token, a cap per
/// user, a token that moves to the user who registers it last.
final class CallGatewayDeviceTests: XCTestCase {
    private func configuration(devicesPerUser: Int = 2) -> CallConfiguration {
        var configuration = CallConfiguration()
        configuration.devicesPerUser = devicesPerUser
        return configuration
    }

    private func code(_ frame: JSONValue?) -> String? { frame?["error"]?["code"]?.stringValue }

    func test_registerListAndUnregister() throws {
        var h = GatewayHarness(configuration())
        let bob = try XCTUnwrap(h.connect("bob"))
        let answer = h.request(bob.socket, "r", "device.register", #"{"provider":"fcm","token":"fcm-1"}"#)
        XCTAssertEqual(answer?["type"], .string("response"))
        XCTAssertEqual(answer?["data"]?["device"]?["provider"], .string("fcm"))
        XCTAssertEqual(answer?["data"]?["device"]?["user_id"], .string("bob"))
        XCTAssertEqual(h.last.mutations, [.saveDevice(DeviceRecord(userID: CallFixture.user("bob"), provider: .fcm, token: "fcm-1", createdAt: h.now))])

        h.advance(1)
        h.request(bob.socket, "r2", "device.register", #"{"provider":"apns_voip","token":"voip-1"}"#)
        let list = h.request(bob.socket, "l", "device.list")
        XCTAssertEqual(list?["data"]?["devices"]?.arrayValue?.compactMap { $0["token"]?.stringValue }, ["fcm-1", "voip-1"])

        let removed = h.request(bob.socket, "u", "device.unregister", #"{"provider":"fcm","token":"fcm-1"}"#)
        XCTAssertEqual(removed?["data"]?["removed"], .bool(true))
        XCTAssertEqual(h.last.mutations, [.deleteDevice(DeviceKey(provider: .fcm, token: "fcm-1"))])
        XCTAssertEqual(h.gateway.devices[CallFixture.user("bob")]?.map(\.token), ["voip-1"])
        XCTAssertEqual(code(h.request(bob.socket, "u2", "device.unregister", #"{"provider":"fcm","token":"fcm-1"}"#)), "not_found")
        XCTAssertTrue(h.last.mutations.isEmpty)
    }

    func test_aUserAtTheCapIsRefusedButMayRegisterAKnownTokenAgain() throws {
        var h = GatewayHarness(configuration(devicesPerUser: 2))
        let bob = try XCTUnwrap(h.connect("bob"))
        h.request(bob.socket, "1", "device.register", #"{"provider":"fcm","token":"a"}"#)
        h.request(bob.socket, "2", "device.register", #"{"provider":"fcm","token":"b"}"#)
        let third = h.request(bob.socket, "3", "device.register", #"{"provider":"fcm","token":"c"}"#)
        XCTAssertEqual(code(third), "too_many_devices")
        XCTAssertTrue(h.last.mutations.isEmpty, "a refused registration writes nothing")
        XCTAssertEqual(h.request(bob.socket, "4", "device.register", #"{"provider":"fcm","token":"b"}"#)?["type"], .string("response"))
        XCTAssertEqual(h.gateway.devices[CallFixture.user("bob")]?.map(\.token), ["a", "b"])
        // The same token string under another provider is another device.
        XCTAssertEqual(code(h.request(bob.socket, "5", "device.register", #"{"provider":"apns","token":"a"}"#)), "too_many_devices")
    }

    func test_aTokenRegisteredByAnotherUserMovesToThem() throws {
        var h = GatewayHarness(configuration())
        let bob = try XCTUnwrap(h.connect("bob"))
        let carol = try XCTUnwrap(h.connect("carol"))
        h.request(bob.socket, "1", "device.register", #"{"provider":"apns","token":"shared-phone"}"#)
        h.request(carol.socket, "2", "device.register", #"{"provider":"apns","token":"shared-phone"}"#)
        XCTAssertNil(h.gateway.devices[CallFixture.user("bob")])
        XCTAssertEqual(h.gateway.devices[CallFixture.user("carol")]?.map(\.token), ["shared-phone"])
        XCTAssertEqual(code(h.request(bob.socket, "3", "device.unregister", #"{"provider":"apns","token":"shared-phone"}"#)), "not_found")
        XCTAssertEqual(h.gateway.devices[CallFixture.user("carol")]?.count, 1, "bob cannot remove carol's device")
    }

    func test_badRegistrationsGetClearErrors() throws {
        var h = GatewayHarness(configuration())
        let bob = try XCTUnwrap(h.connect("bob"))
        let unknown = h.request(bob.socket, "1", "device.register", #"{"provider":"pager","token":"x"}"#)
        XCTAssertEqual(code(unknown), "invalid_request")
        XCTAssertEqual(unknown?["error"]?["message"], .string("data.provider must be one of apns, apns_voip, fcm, webpush"))
        let huge = String(repeating: "x", count: DeviceRecord.maximumTokenBytes + 1)
        XCTAssertEqual(code(h.request(bob.socket, "2", "device.register", #"{"provider":"fcm","token":"\#(huge)"}"#)), "payload_too_large")
        XCTAssertEqual(code(h.request(bob.socket, "3", "device.register", #"{"provider":"fcm","token":""}"#)), "invalid_request")
        XCTAssertEqual(code(h.request(bob.socket, "4", "device.register", #"{"provider":"fcm","token":42}"#)), "invalid_request")
        XCTAssertEqual(code(h.request(bob.socket, "5", "device.register", #"{"provider":"fcm","token":"a\u0001b"}"#)), "invalid_request")
        let exact = String(repeating: "y", count: DeviceRecord.maximumTokenBytes)
        XCTAssertEqual(h.request(bob.socket, "6", "device.register", #"{"provider":"webpush","token":"\#(exact)"}"#)?["type"], .string("response"))
        XCTAssertNil(h.gateway.devices[CallFixture.user("bob")]?.first { $0.token.count != exact.count })
    }

    func test_devicesComeBackFromTheStoreAtRestart() throws {
        var h = GatewayHarness(configuration())
        let snapshot = CallStateSnapshot(devices: [
            DeviceRecord(userID: CallFixture.user("bob"), provider: .fcm, token: "t2", createdAt: CallFixture.at(2)),
            DeviceRecord(userID: CallFixture.user("bob"), provider: .fcm, token: "t1", createdAt: CallFixture.at(1)),
        ])
        var output = CallGatewayOutput()
        h.gateway.restore(snapshot, now: h.now, into: &output)
        XCTAssertEqual(h.gateway.devices[CallFixture.user("bob")]?.map(\.token), ["t1", "t2"])
        XCTAssertNil(h.gateway.clients.values.first { $0.user == CallFixture.user("bob") }, "bob has devices but no connection")
    }
}
