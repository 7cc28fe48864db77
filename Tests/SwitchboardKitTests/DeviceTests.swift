import Foundation
import XCTest

@testable import SwitchboardKit

/// Push devices' frames (docs/protocol.md 6.5, `device.*`), as the protocol document shows them.
final class DeviceTests: XCTestCase {
    static let token = "5f2b9c0e7a41d3886b0f1e2d4c6a8b9e0f1a2b3c4d5e6f708192a3b4c5d6e7f8"
    static let device = Device(deviceId: "818c06c413fa4f8cc7b83683", userId: "bob", provider: .apnsVoIP, token: token, createdAt: 1_795_310_000_000)
    static let deviceJSON =
        #"{"created_at":1795310000000,"device_id":"818c06c413fa4f8cc7b83683","provider":"apns_voip","token":"\#(token)","user_id":"bob"}"#
    static let fcmJSON = #"{"created_at":1795310001000,"device_id":"a1b2c3d4e5f6a7b8c9d0e1f2","provider":"fcm","token":"fcm-token","user_id":"bob"}"#

    func data(_ text: String) throws -> JSONValue {
        guard case .response(_, let data) = try ServerFrame.parse(text) else { throw SwitchboardClientError(.protocolError, "not a response") }
        return data
    }

    func test_requestsCarryTheProviderAndToken() {
        XCTAssertEqual(
            Wire.request(type: "device.register", id: 4, data: Device.fields(provider: .apnsVoIP, token: Self.token)),
            #"{"data":{"provider":"apns_voip","token":"\#(Self.token)"},"id":4,"type":"device.register"}"#)
        XCTAssertEqual(
            Wire.request(type: "device.unregister", id: 5, data: Device.fields(provider: .webpush, token: #"{"endpoint":"https://push.example.net/x"}"#)),
            #"{"data":{"provider":"webpush","token":"{\"endpoint\":\"https://push.example.net/x\"}"},"id":5,"type":"device.unregister"}"#)
        XCTAssertEqual(DeviceProvider.allCases.map(\.rawValue), ["apns", "apns_voip", "fcm", "webpush"])
    }

    func test_theRegisterAnswerIsTheDevice() throws {
        let answer = try data(#"{"data":{"device":\#(Self.deviceJSON)},"id":"d1","type":"response"}"#)
        XCTAssertEqual(try Device(json: try answer.field("device")), Self.device)
        XCTAssertEqual(try Wire.decode(Device.self, from: try answer.field("device")), Self.device, "Decodable reads the same")
    }

    func test_theListAnswerIsTheDevicesInOrder() throws {
        let fcm = Device(deviceId: "a1b2c3d4e5f6a7b8c9d0e1f2", userId: "bob", provider: .fcm, token: "fcm-token", createdAt: 1_795_310_001_000)
        let answer = try data(#"{"data":{"devices":[\#(Self.deviceJSON),\#(Self.fcmJSON)]},"id":"d3","type":"response"}"#)
        XCTAssertEqual(try Device.list(try answer.field("devices")), [Self.device, fcm])
        XCTAssertEqual(try Device.list(try data(#"{"data":{"devices":[]},"id":1,"type":"response"}"#).field("devices")), [])
    }

    func test_unreadableDevicesAreProtocolErrors() {
        let bad: [JSONValue] = [
            ["created_at": 1, "device_id": "d", "provider": "pushy", "token": "t", "user_id": "bob"],
            ["created_at": 1, "device_id": "d", "provider": "fcm", "user_id": "bob"],
            ["created_at": "1", "device_id": "d", "provider": "fcm", "token": "t", "user_id": "bob"],
        ]
        for json in bad {
            XCTAssertThrowsError(try Device(json: json), "\(json)") { error in
                XCTAssertEqual((error as? SwitchboardClientError)?.code, .protocolError)
            }
        }
        XCTAssertThrowsError(try Device.list(["devices": []])) { error in
            XCTAssertEqual((error as? SwitchboardClientError)?.code, .protocolError)
        }
    }

    func test_refusalsCarryTheirCodes() throws {
        XCTAssertEqual(
            try ServerFrame.parse(#"{"error":{"code":"too_many_devices","message":"user bob has 10 devices; unregister one first"},"id":6,"type":"error"}"#),
            .error(id: 6, SwitchboardClientError(.tooManyDevices, "user bob has 10 devices; unregister one first")))
        XCTAssertEqual(
            try ServerFrame.parse(#"{"error":{"code":"not_found","message":"no such device"},"id":7,"type":"error"}"#),
            .error(id: 7, SwitchboardClientError(.notFound, "no such device")))
        XCTAssertFalse(SwitchboardClientError(.tooManyDevices, "").isRetryable)
        XCTAssertFalse(SwitchboardClientError(.notFound, "").isRetryable)
    }
}
