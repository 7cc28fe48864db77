import Configuration
import Foundation
import SwitchboardAdmin
import SwitchboardServer
import SwitchboardStore
import XCTest

final class AdminAndStoreConfigurationTests: XCTestCase {
    private func load(_ overrides: [String: ConfigContent], environment: [String: String] = [:]) throws -> SwitchboardConfiguration {
        try ConfigurationLoader.load(fileContents: nil, environment: environment, overrides: overrides)
    }

    private func message(_ overrides: [String: ConfigContent]) -> String? {
        do {
            _ = try load(overrides)
            return nil
        } catch {
            return "\(error)"
        }
    }

    func test_anAdminListenerOffLoopbackWithoutATokenIsRefusedNamingTheKey() {
        let text = message(["admin.host": .string("0.0.0.0")])
        XCTAssertTrue(text?.contains("admin.token") == true, text ?? "loaded")
    }

    func test_anAdminListenerOffLoopbackWithATokenLoads() throws {
        let configuration = try load(["admin.host": .string("0.0.0.0"), "admin.token": .string("s3cret")])
        XCTAssertEqual(configuration.admin.token, "s3cret")
        XCTAssertEqual(configuration.transport.listener(.admin)?.host, "0.0.0.0")
    }

    func test_loopbackAddressesNeedNoToken() throws {
        for host in ["127.0.0.1", "127.0.0.2", "::1", "localhost"] {
            XCTAssertNil(try load(["admin.host": .string(host)]).admin.token, host)
        }
    }

    func test_theTokenCanComeFromAFileAndOnlyItsFirstLineCounts() throws {
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("token-\(UUID().uuidString)")
        try "from-file\nignored\n".write(to: file, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(at: file) }
        XCTAssertEqual(try load(["admin.token_file": .string(file.path)]).admin.token, "from-file")
    }

    func test_settingBothTokenAndTokenFileIsRefused() {
        let text = message(["admin.token": .string("a"), "admin.token_file": .string("/etc/hostname")])
        XCTAssertTrue(text?.contains("admin.token_file") == true, text ?? "loaded")
    }

    func test_anUnreadableTokenFileIsRefusedNamingTheKey() {
        let text = message(["admin.token_file": .string("/nonexistent/token")])
        XCTAssertTrue(text?.contains("admin.token_file") == true, text ?? "loaded")
    }

    func test_theTokenComesFromTheEnvironmentToo() throws {
        XCTAssertEqual(try load([:], environment: ["SWITCHBOARD_ADMIN_TOKEN": "env-token"]).admin.token, "env-token")
    }

    func test_storeSettingsAreReadAndValidated() throws {
        let configuration = try load(["store.directory": .string("/var/lib/x"), "store.synchronous": .string("full")])
        XCTAssertEqual(configuration.store, StoreConfiguration(directory: "/var/lib/x", synchronous: .full, busyTimeout: .seconds(5)))
        XCTAssertEqual(configuration.store.databasePath, "/var/lib/x/switchboard.sqlite")
        let text = message(["store.synchronous": .string("off")])
        XCTAssertTrue(text?.contains("store.synchronous") == true, text ?? "loaded")
    }

    func test_theAdminTokenNeverAppearsInAnErrorMessage() {
        let text = message(["admin.token": .string("top-secret-value"), "admin.port": .int(70000)])
        XCTAssertNotNil(text)
        XCTAssertFalse(text?.contains("top-secret-value") == true)
    }
}

extension AdminAndStoreConfigurationTests {
    func test_signedPeerIDsNeedAnAPISecretAndNameTheKey() {
        let text = try? ConfigurationLoader.load(fileContents: nil, environment: [:], overrides: ["peerjs.auth": .string("jwt")])
        XCTAssertNil(text)
        do {
            _ = try ConfigurationLoader.load(fileContents: nil, environment: [:], overrides: ["peerjs.auth": .string("jwt")])
        } catch {
            XCTAssertTrue("\(error)".contains("peerjs.auth"), "\(error)")
        }
    }

    func test_aShortAPISecretIsRefusedNamingTheKeyAndNotTheSecret() {
        do {
            _ = try ConfigurationLoader.load(fileContents: nil, environment: ["SWITCHBOARD_AUTH_API_SECRET": "too-short-secret"], overrides: [:])
            XCTFail("loaded")
        } catch {
            XCTAssertTrue("\(error)".contains("auth.api_secret"), "\(error)")
            XCTAssertFalse("\(error)".contains("too-short-secret"))
        }
    }

    func test_signedPeerIDsAreSwitchedOnWithASecret() throws {
        let configuration = try ConfigurationLoader.load(
            fileContents: nil, environment: [:],
            overrides: ["peerjs.auth": .string("jwt"), "auth.api_secret": .string(String(repeating: "s", count: 32))])
        XCTAssertTrue(configuration.relay.requireSignedIDs)
        XCTAssertEqual(configuration.auth.apiSecret?.count, 32)
    }
}
