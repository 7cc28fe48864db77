import Configuration
import Foundation
import SwitchboardCore
import SwitchboardServer
import XCTest

/// `webhooks.*`: endpoints, secrets, filters; every refusal names its key.
final class WebhookConfigurationTests: XCTestCase {
    private let secret = "whsec_" + Data(repeating: 1, count: 32).base64EncodedString()

    private func load(_ overrides: [String: ConfigContent], environment: [String: String] = [:]) throws -> SwitchboardConfiguration {
        try ConfigurationLoader.load(fileContents: nil, environment: environment, overrides: overrides)
    }

    private func message(_ overrides: [String: ConfigContent], environment: [String: String] = [:]) -> String? {
        do {
            _ = try load(overrides, environment: environment)
            return nil
        } catch {
            return "\(error)"
        }
    }

    func test_byDefaultThereIsNoEndpointAndNothingIsRouted() throws {
        let configuration = try load([:])
        XCTAssertEqual(configuration.webhooks.endpoints, [])
        XCTAssertTrue(configuration.calls.webhooks.isEmpty)
        XCTAssertEqual(configuration.webhooks.retryHorizon, .seconds(86_400))
        XCTAssertEqual(configuration.webhooks.timeout, .seconds(10))
        XCTAssertEqual(configuration.calls.devicesPerUser, 10)
        XCTAssertEqual(configuration.webhooks.retention, .seconds(604_800))
        XCTAssertEqual(configuration.webhooks.niceness, 10)
    }

    func test_endpointsWithSecretsAndFiltersAreRead() throws {
        let configuration = try load([
            "webhooks.endpoints": .stringArray(["billing=https://billing.example.com/hooks", "ops=http://127.0.0.1:8088/in"]),
            "webhooks.secrets": .stringArray(["billing=\(secret)", "ops=\(secret)"]),
            "webhooks.events": .stringArray(["billing=call.ended, call.participant_left"]),
            "webhooks.timeout_ms": .int(2500), "webhooks.retention_ms": .int(0), "webhooks.niceness": .int(0),
        ])
        XCTAssertEqual(configuration.webhooks.retention, .zero)
        XCTAssertEqual(configuration.webhooks.niceness, 0)
        XCTAssertEqual(configuration.webhooks.endpoints.map(\.name), ["billing", "ops"])
        XCTAssertEqual(configuration.webhooks.endpoints[0].events, [.callEnded, .participantLeft])
        XCTAssertEqual(configuration.webhooks.endpoints[1].events, Set(WebhookEventType.allCases))
        XCTAssertEqual(configuration.webhooks.timeout, .milliseconds(2500))
        XCTAssertEqual(configuration.calls.webhooks.endpoints(for: .callEnded), ["billing", "ops"])
        XCTAssertEqual(configuration.calls.webhooks.endpoints(for: .callRing), ["ops"])
    }

    func test_inTheEnvironmentEntriesOfOneEndpointAddUp() throws {
        let configuration = try load(
            [:],
            environment: [
                "SWITCHBOARD_WEBHOOKS_ENDPOINTS": "main=http://127.0.0.1:9/hook", "SWITCHBOARD_WEBHOOKS_SECRETS": "main=\(secret)",
                "SWITCHBOARD_WEBHOOKS_EVENTS": "main=call.ring,main=call.missed",
            ])
        XCTAssertEqual(configuration.webhooks.endpoints.first?.events, [.callRing, .callMissed])
    }

    func test_aSecretCanComeFromAFile() throws {
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("whsec-\(UUID().uuidString)")
        try (secret + "\nignored\n").write(to: file, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(at: file) }
        let configuration = try load([
            "webhooks.endpoints": .stringArray(["main=https://h.example/x"]), "webhooks.secret_files": .stringArray(["main=\(file.path)"]),
        ])
        XCTAssertEqual(configuration.webhooks.endpoints.first?.secret, secret)
    }

    func test_badEndpointsSecretsAndFiltersAreRefusedNamingTheKey() {
        let endpoint: [String: ConfigContent] = ["webhooks.endpoints": .stringArray(["main=https://h.example/x"])]
        func with(_ extra: [String: ConfigContent]) -> [String: ConfigContent] { endpoint.merging(extra) { _, new in new } }
        let cases: [([String: ConfigContent], String)] = [
            (["webhooks.endpoints": .stringArray(["main=ftp://h.example/x"]), "webhooks.secrets": .stringArray(["main=\(secret)"])], "webhooks.endpoints: main:"),
            (["webhooks.endpoints": .stringArray(["main=not a url"]), "webhooks.secrets": .stringArray(["main=\(secret)"])], "webhooks.endpoints: main:"),
            (["webhooks.endpoints": .stringArray(["https://h.example/x"])], "webhooks.endpoints:"),
            (["webhooks.endpoints": .stringArray(["bad name=https://h.example/x"])], "webhooks.endpoints:"),
            (["webhooks.endpoints": .stringArray(["main=https://user:pw@h.example/x"]), "webhooks.secrets": .stringArray(["main=\(secret)"])], "webhooks.endpoints: main: the URL must not hold credentials"),
            (["webhooks.endpoints": .stringArray(["main=https://a.example", "main=https://b.example"])], "webhooks.endpoints: the endpoint main is named twice"),
            (endpoint, "webhooks.secrets: the endpoint main has no secret"),
            (with(["webhooks.secrets": .stringArray(["main=whsec_c2hvcnQ="])]), "webhooks.secrets: main:"),
            (with(["webhooks.secrets": .stringArray(["main=notasecret"])]), "webhooks.secrets: main:"),
            (with(["webhooks.secrets": .stringArray(["main=\(secret)", "main=\(secret)"])]), "webhooks.secrets: main has a secret already"),
            (with(["webhooks.secrets": .stringArray(["main=\(secret)", "other=\(secret)"])]), "webhooks.secrets: other is not in webhooks.endpoints"),
            (with(["webhooks.secrets": .stringArray(["main=\(secret)"]), "webhooks.events": .stringArray(["main=call.rang"])]), "webhooks.events: main: call.rang is not an event"),
            (with(["webhooks.secrets": .stringArray(["main=\(secret)"]), "webhooks.events": .stringArray(["other=call.ring"])]), "webhooks.events: other is not in webhooks.endpoints"),
            (with(["webhooks.secret_files": .stringArray(["main=/nonexistent/secret"])]), "webhooks.secret_files: main: cannot read"),
            (with(["webhooks.secrets": .stringArray(["main=\(secret)"]), "webhooks.timeout_ms": .int(50)]), "webhooks.timeout_ms"),
        ]
        for (overrides, expected) in cases {
            let refusal = message(overrides)
            XCTAssertTrue(refusal?.contains(expected) == true, "\(overrides): \(refusal ?? "loaded")")
            XCTAssertTrue(refusal?.contains("invalid_configuration") == true, "\(overrides): \(refusal ?? "loaded")")
            XCTAssertFalse(refusal?.contains(secret) ?? false, "a secret is never echoed")
        }
    }
}
