import Foundation
import SwitchboardCore
import XCTest

/// Standard Webhooks secrets and signatures, checked against values computed outside the signer
/// (Python's `hmac` and `base64`: `base64.b64encode(hmac.new(key, b"<id>.<timestamp>.<body>",
/// hashlib.sha256).digest())`).
final class WebhookSignatureTests: XCTestCase {
    /// The key of `whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw` (24 bytes).
    private let publishedSecret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"

    func test_knownAnswersComputedWithPython() throws {
        // python3: base64.b64encode(hmac.new(key, b"<id>.<ts>.<body>", hashlib.sha256).digest())
        let key = try WebhookSignature.key(fromSecret: publishedSecret)
        XCTAssertEqual(key.count, 24)
        XCTAssertEqual(
            WebhookSignature.signature(
                id: "msg_p5jXN8AQM9LWM0D4loKWxJek", timestamp: 1_614_265_330, body: Array(#"{"test": 2432232314}"#.utf8), keys: [key]),
            "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=")
        let counting = try WebhookSignature.key(fromSecret: "whsec_AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=")
        XCTAssertEqual(counting, Array(0..<32))
        XCTAssertEqual(
            WebhookSignature.signature(
                id: "msg_01", timestamp: 1_700_000_000, body: Array(#"{"type":"call.created","x":"é"}"#.utf8), keys: [counting]),
            "v1,2J0493TtK14qtn1Whu/N3p8CcACLhplxdSHBAUxYIwc=", "the body's UTF-8 bytes are signed as they are")
    }

    func test_theSignatureIsTheHMACOfIdTimestampAndTheBodyBytes() throws {
        let key = Array((0..<32).map { UInt8(255 - $0) })
        let body: [UInt8] = Array(#"{"type":"call.ended","data":{"seq":3}}"#.utf8) + [0xFF, 0x00]
        XCTAssertEqual(
            WebhookSignature.signature(id: "msg_abc", timestamp: 1_700_000_123, body: body, keys: [key]),
            "v1,TfTwWxJV4D7B4XiP9ssywGOfwln9eDeXHmm+6B5Byzg=", "bytes that are not UTF-8 are signed as they are")
    }

    func test_aRotationSignsWithTheCurrentKeyThenThePreviousOne() throws {
        let current = Array(repeating: UInt8(1), count: 32)
        let previous = Array(repeating: UInt8(2), count: 24)
        let body = Array("{}".utf8)
        let header = WebhookSignature.signature(id: "msg_1", timestamp: 42, body: body, keys: [current, previous])
        let parts = header.split(separator: " ").map(String.init)
        XCTAssertEqual(parts, ["v1,KRxCoY68Qu44IZWVxs+bynxHdhv9kkYpJoxqwL7qrxQ=", "v1,wykMbLt2Pt0a6tXSHdzQs9dMSuWHXK8/I0C1MQ1Ft+g="])
        XCTAssertEqual(parts[0], WebhookSignature.signature(id: "msg_1", timestamp: 42, body: body, keys: [current]))
        XCTAssertEqual(WebhookSignature.signature(id: "msg_1", timestamp: 42, body: body, keys: []), "")
    }

    func test_theHeadersCarryTheIdWholeSecondsAndTheSignature() throws {
        let key = try WebhookSignature.key(fromSecret: publishedSecret)
        let now = Date(timeIntervalSince1970: 1_700_000_000.999)
        let headers = WebhookSignature.headers(id: "msg_7", body: Array("{}".utf8), keys: [key], now: now)
        XCTAssertEqual(headers.map(\.name), ["webhook-id", "webhook-timestamp", "webhook-signature"])
        XCTAssertEqual(headers.map(\.value)[0...1], ["msg_7", "1700000000"], "whole seconds, rounded down")
        XCTAssertEqual(headers[2].value, WebhookSignature.signature(id: "msg_7", timestamp: 1_700_000_000, body: Array("{}".utf8), keys: [key]))
        XCTAssertEqual(WebhookSignature.timestamp(Date(timeIntervalSince1970: 59.2)), 59)
    }

    func test_badSecretsAreRefusedWithTheProblemNamed() {
        let cases: [(String, String)] = [
            ("MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", "must start with whsec_"),
            ("WHSEC_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", "must start with whsec_"),
            ("whsec_", "base64"),
            ("whsec_not base64!", "base64"),
            ("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaS", "base64"),
            ("whsec_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=", "has 23 bytes; at least 24 bytes (192 bits)"),
            ("whsec_c2hvcnQ=", "has 5 bytes"),
        ]
        for (secret, problem) in cases {
            do {
                _ = try WebhookSignature.key(fromSecret: secret)
                XCTFail("\(secret) must be refused")
            } catch {
                XCTAssertEqual(error.code, .invalidConfiguration)
                XCTAssertTrue(error.message.contains(problem), "\(secret): \(error.message)")
                XCTAssertFalse(secret.count > 8 && error.message.contains(secret.dropFirst(6)), "the secret is not echoed")
            }
        }
        XCTAssertEqual(try WebhookSignature.key(fromSecret: "whsec_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"), Array(repeating: 0, count: 24))
    }

    func test_aNewSecretHas32KeyBytesFromTheGeneratorAndParses() throws {
        var generator = SplitMix64(seed: 7)
        let secret = WebhookSignature.newSecret(using: &generator)
        XCTAssertTrue(secret.hasPrefix("whsec_"))
        let key = try WebhookSignature.key(fromSecret: secret)
        XCTAssertEqual(key.count, 32)
        XCTAssertEqual(WebhookSignature.secret(forKey: key), secret)
        var same = SplitMix64(seed: 7)
        XCTAssertEqual(WebhookSignature.newSecret(using: &same), secret, "all randomness comes from the generator")
        var other = SplitMix64(seed: 8)
        XCTAssertNotEqual(WebhookSignature.newSecret(using: &other), secret)
    }

    /// The body is written directly: the same bytes a JSON object of its three keys writes
    /// (sorted keys), for every kind of value `data` holds.
    func test_theBodyIsTheBytesOfItsJSONObject() {
        let data: JSONValue = .object([
            "call_cid": .string("default:é \"q\"\n"), "seq": .number(3), "members": .array([.string("a"), .null, .bool(true)]),
            "nested": .object(["z": .number(-1.5), "a": .object([:])]),
        ])
        for (type, millis) in [(WebhookEventType.callRing, 1_700_000_000_123.0), (.sfuDown, 0)] {
            let message = WebhookMessage(
                id: "msg_1", type: type, createdAt: Date(timeIntervalSince1970: millis / 1000), lane: "l", seq: 1, data: data)
            let object = JSONValue.object(["type": .string(type.rawValue), "created_at": .number(millis), "data": data])
            XCTAssertEqual(String(decoding: message.body, as: UTF8.self), String(decoding: object.bytes, as: UTF8.self))
        }
    }

    func test_aRotationStandsUntilTheConfiguredSecretChanges() {
        let old = "whsec_" + Data(repeating: 1, count: 32).base64EncodedString()
        let new = "whsec_" + Data(repeating: 2, count: 32).base64EncodedString()
        let digest = WebhookSignature.digest(ofConfiguredSecret: old)
        XCTAssertEqual(digest.count, 64)
        XCTAssertTrue(digest.allSatisfy { $0.isHexDigit && !$0.isUppercase })
        XCTAssertEqual(digest, WebhookSignature.digest(ofConfiguredSecret: old))
        XCTAssertNotEqual(digest, WebhookSignature.digest(ofConfiguredSecret: new))
        XCTAssertFalse(digest.contains(old.dropFirst(6)), "the digest is not the secret")

        let gone = Date(timeIntervalSince1970: 5)
        let rotated = WebhookEndpointState(
            name: "ops", secret: "whsec_r", previousSecret: old, previousUntil: gone, disabledAt: gone, configuredDigest: digest)
        XCTAssertNil(rotated.reconciled(withConfiguredSecret: old), "same configuration")
        XCTAssertEqual(rotated.reconciled(withConfiguredSecret: new), WebhookEndpointState(name: "ops", disabledAt: gone))
        var legacy = rotated
        legacy.configuredDigest = nil
        XCTAssertNil(legacy.reconciled(withConfiguredSecret: new), "no digest: which secret was meant is unknown")
        XCTAssertNil(WebhookEndpointState(name: "ops", disabledAt: gone, configuredDigest: digest).reconciled(withConfiguredSecret: new), "nothing rotated")
    }
}
