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

    func test_anAdminListenerOffLoopbackWithoutATokenLoadsWithTokenAuthForTheDaemonToGenerateOne() throws {
        let configuration = try load(["admin.host": .string("0.0.0.0")])
        XCTAssertEqual(configuration.admin.auth, .token)
        XCTAssertNil(configuration.admin.token, "the daemon generates it into the state directory at start")
    }

    func test_anAdminListenerOffLoopbackWithATokenLoads() throws {
        let configuration = try load(["admin.host": .string("0.0.0.0"), "admin.token": .string("s3cret")])
        XCTAssertEqual(configuration.admin.token, "s3cret")
        XCTAssertEqual(configuration.transport.listener(.admin)?.host, "0.0.0.0")
    }

    func test_authNoneIsAllowedOnLoopbackAddressesOnly() throws {
        for host in ["127.0.0.1", "127.0.0.2", "::1"] {
            let configuration = try load(["admin.host": .string(host), "admin.auth": .string("none")])
            XCTAssertEqual(configuration.admin.auth, .none, host)
            XCTAssertNil(configuration.admin.token, host)
        }
        // Names are not addresses: a prefix match let 127.0.0.1.nip.io through before.
        for host in ["0.0.0.0", "localhost", "127.0.0.1.nip.io", "127.example.com", "10.0.0.1"] {
            let text = message(["admin.host": .string(host), "admin.auth": .string("none")])
            XCTAssertTrue(text?.contains("admin.auth") == true, "\(host): \(text ?? "loaded")")
        }
    }

    func test_allowedHostsMustBeHostNames() {
        let text = message(["admin.allowed_hosts": .stringArray(["admin.example.net", "evil\r\nX: y"])])
        XCTAssertTrue(text?.contains("admin.allowed_hosts") == true, text ?? "loaded")
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

    func test_thePostgresStoreNeedsAURLThatIsOneNamingTheKeyAndNeverThePassword() throws {
        XCTAssertNil(try load([:]).postgres, "sqlite by default")
        XCTAssertNil(try load(["store.postgres_url": .string("postgres://sb@db/calls")]).postgres, "the URL alone does not switch")
        let configuration = try load([:], environment: ["SWITCHBOARD_STORE_KIND": "postgres", "SWITCHBOARD_STORE_POSTGRES_URL": "postgres://sb:pw@db.internal:6432/calls"])
        XCTAssertEqual(configuration.postgres?.host, "db.internal")
        XCTAssertEqual(configuration.postgres?.port, 6432)
        XCTAssertEqual(configuration.postgres?.database, "calls")
        XCTAssertEqual(configuration.postgres?.password, "pw")
        for (overrides, key) in [
            (["store.kind": ConfigContent.string("postgres")], "store.postgres_url"),
            (["store.kind": .string("postgres"), "store.postgres_url": .string("mysql://sb:hunter2@db/calls")], "store.postgres_url"),
            (["store.kind": .string("postgres"), "store.postgres_url": .string("postgres://sb:hunter2@db")], "store.postgres_url"),
            (["store.kind": .string("mongo")], "store.kind"),
        ] {
            let text = message(overrides)
            XCTAssertTrue(text?.contains(key) == true, "\(overrides): \(text ?? "loaded")")
            XCTAssertFalse(text?.contains("hunter2") == true, "never the password: \(text ?? "")")
        }
    }

    /// Calls on every daemon need PostgreSQL and relaying daemons; the error names the key.
    func test_spreadCallsNeedPostgresAndRelayingDaemons() throws {
        let postgres: [String: ConfigContent] = ["store.kind": .string("postgres"), "store.postgres_url": .string("postgres://sb@db/calls")]
        XCTAssertFalse(try load(postgres).postgresSpreadsCalls, "the leader runs every call by default")
        XCTAssertTrue(try load(postgres.merging(["store.postgres_calls": .string("spread")]) { $1 }).postgresSpreadsCalls)
        for overrides in [
            ["store.postgres_calls": ConfigContent.string("spread")],
            postgres.merging(["store.postgres_calls": .string("spread"), "store.postgres_standby": .string("idle")]) { $1 },
            postgres.merging(["store.postgres_calls": .string("everywhere")]) { $1 },
        ] {
            let text = message(overrides)
            XCTAssertTrue(text?.contains("store.postgres_calls") == true, "\(overrides): \(text ?? "loaded")")
        }
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

    func test_aTLSFileThatCannotBeReadIsAConfigurationErrorNamingTheKey() {
        let text = message(["server.tls.cert_file": .string("/etc/hostname"), "server.tls.key_file": .string("/nonexistent/key.pem")])
        XCTAssertTrue(text?.contains("server.tls.key_file: cannot read /nonexistent/key.pem") == true, text ?? "loaded")
    }
}
