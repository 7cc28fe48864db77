import Configuration
import Foundation
import Logging
import SwitchboardAdmin
import SwitchboardCore
import SwitchboardStore
import SwitchboardServer
import SwitchboardTransport
import XCTest

final class ConfigurationLoaderTests: XCTestCase {
    /// `config/switchboard.json` of this repository, found from this file's path.
    private static let shippedFile = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent()  // SwitchboardServerTests
        .deletingLastPathComponent()  // Tests
        .deletingLastPathComponent()  // repository root
        .appendingPathComponent("config/switchboard.json")

    private func load(
        _ json: String? = nil, environment: [String: String] = [:], overrides: [String: ConfigContent] = [:]
    ) throws -> SwitchboardConfiguration {
        try ConfigurationLoader.load(fileContents: json.map { Data($0.utf8) }, environment: environment, overrides: overrides)
    }

    /// Asserts loading fails with an `invalid_configuration` error whose message contains every
    /// one of `fragments`.
    private func assertFails(
        _ json: String? = nil, environment: [String: String] = [:], overrides: [String: ConfigContent] = [:],
        naming fragments: String..., file: StaticString = #filePath, line: UInt = #line
    ) {
        do {
            let configuration = try load(json, environment: environment, overrides: overrides)
            XCTFail("loaded \(configuration.relay) instead of failing", file: file, line: line)
        } catch let error as SwitchboardError {
            XCTAssertEqual(error.code, .invalidConfiguration, file: file, line: line)
            for fragment in fragments {
                XCTAssertTrue(error.message.contains(fragment), "\(error.message.debugDescription) does not name \(fragment)", file: file, line: line)
            }
        } catch {
            XCTFail("threw \(error), not a SwitchboardError", file: file, line: line)
        }
    }

    /// Compares every part of two configurations.
    private func assertSame(
        _ actual: SwitchboardConfiguration, _ expected: SwitchboardConfiguration, file: StaticString = #filePath, line: UInt = #line
    ) {
        XCTAssertEqual(actual.transport, expected.transport, file: file, line: line)
        XCTAssertEqual(actual.relay, expected.relay, file: file, line: line)
        XCTAssertEqual(actual.peerJSRoutes.mountPath, expected.peerJSRoutes.mountPath, file: file, line: line)
        XCTAssertEqual(actual.peerJSRoutes.corsOrigins, expected.peerJSRoutes.corsOrigins, file: file, line: line)
        XCTAssertEqual(actual.drainTimeout, expected.drainTimeout, file: file, line: line)
        XCTAssertEqual(actual.admin, expected.admin, file: file, line: line)
        XCTAssertEqual(actual.store, expected.store, file: file, line: line)
        XCTAssertEqual(actual.logLevel, expected.logLevel, file: file, line: line)
    }

    func test_theOutboxAndThePartialBudgetMustHoldTheLargestMessage() throws {
        let defaults = try load()
        XCTAssertEqual(defaults.transport.maxMessageBytes, 1 << 20, "a large SDP is relayed, as the PeerJS server does")
        XCTAssertEqual(defaults.transport.outboxBytes, 2 << 20)
        XCTAssertEqual(defaults.transport.partialMessageBytes, 64 << 20)
        assertFails(#"{"transport":{"max_message_bytes":1048576,"outbox_bytes":1048576}}"#, naming: "transport.outbox_bytes", "1052672")
        assertFails(environment: ["SWITCHBOARD_TRANSPORT_PARTIAL_MESSAGE_BYTES": "65536"], naming: "transport.partial_message_bytes")
        let small = try load(#"{"transport":{"max_message_bytes":65536,"outbox_bytes":69632,"partial_message_bytes":65536}}"#)
        XCTAssertEqual(small.transport.outboxBytes, 69632)
    }

    func test_pollsAreCappedAtAQuarterOfStaleAfter() throws {
        let defaults = try load()
        XCTAssertEqual(defaults.placement.pollInterval, .seconds(1))
        XCTAssertEqual(defaults.placement.pollTimeout, .seconds(1))
        XCTAssertFalse(defaults.placement.pollCapped)
        // Both are capped at a quarter of stale_after, so that a healthy SFU always answers in time.
        let capped = try load(#"{"placement":{"stale_after_ms":1000,"poll_interval_ms":200,"poll_timeout_ms":900}}"#)
        XCTAssertEqual(capped.placement.pollInterval, .milliseconds(200))
        XCTAssertEqual(capped.placement.pollTimeout, .milliseconds(250))
        XCTAssertTrue(capped.placement.pollCapped)
        let short = try load(environment: ["SWITCHBOARD_PLACEMENT_STALE_AFTER_MS": "1200"])
        XCTAssertEqual(short.placement.pollInterval, .milliseconds(300))
        XCTAssertEqual(short.placement.pollTimeout, .milliseconds(300))
        let tight = try load(#"{"placement":{"stale_after_ms":1000,"poll_interval_ms":200,"poll_timeout_ms":250}}"#)
        XCTAssertFalse(tight.placement.pollCapped)
    }

    // MARK: Defaults and the shipped file

    func test_theBuiltInDefaultsAreTheDocumentedValues() throws {
        let defaults = try SwitchboardConfiguration.defaults
        XCTAssertEqual(defaults.transport, TransportConfiguration(
            listeners: [
                ListenerConfiguration(
                    role: .client, host: "0.0.0.0", port: 9000, webSocketPaths: ["/peerjs", "/v1/connect"], maxRequestBodyBytes: 65536,
                    onEveryServiceThread: true),
                ListenerConfiguration(role: .admin, host: "127.0.0.1", port: 8081, maxRequestBodyBytes: 65536, onEveryServiceThread: false),
            ],
            serviceThreads: 1, maxMessageBytes: 1_048_576, outboxBytes: 2_097_152, handshakeTimeout: .milliseconds(10000),
            pingInterval: .milliseconds(30000)))
        XCTAssertEqual(defaults.admin, AdminConfiguration(token: nil))
        XCTAssertEqual(defaults.store, StoreConfiguration(directory: "./data", synchronous: .normal, busyTimeout: .milliseconds(5000), checkpointInterval: .milliseconds(1000), foldInterval: .milliseconds(2000)))
        XCTAssertEqual(defaults.relay, RelayConfiguration(
            key: "peerjs", concurrentLimit: 5000, expireTimeout: .milliseconds(5000), aliveTimeout: .milliseconds(60000),
            allowDiscovery: false, maxQueuedPerDestination: 256, maxQueuedPerSender: 1024, maxQueuedTotal: 100_000,
            maxQueuedBytes: 67_108_864, malformedRate: 5, malformedBurst: 20))
        XCTAssertEqual(defaults.peerJSRoutes.mountPath, "/")
        XCTAssertEqual(defaults.peerJSRoutes.corsOrigins, [])
        XCTAssertEqual(defaults.drainTimeout, .milliseconds(10000))
        XCTAssertEqual(defaults.logLevel, .info)
    }

    func test_theShippedConfigFileLoadsToTheBuiltInDefaults() throws {
        let configuration = try ConfigurationLoader.load(filePath: Self.shippedFile.path, environment: [:])
        assertSame(configuration, try SwitchboardConfiguration.defaults)
    }

    func test_theShippedConfigFileNamesEveryKeyAtItsDefault() throws {
        let root = try XCTUnwrap(JSONSerialization.jsonObject(with: Data(contentsOf: Self.shippedFile)) as? [String: Any])
        var leaves: [String: Any] = [:]
        func walk(_ object: [String: Any], _ prefix: String) {
            for (name, value) in object {
                let key = prefix.isEmpty ? name : prefix + "." + name
                if let nested = value as? [String: Any] { walk(nested, key) } else { leaves[key] = value }
            }
        }
        walk(root, "")
        XCTAssertEqual(leaves.keys.sorted(), ConfigKeySpec.all.map(\.key).sorted())
        for spec in ConfigKeySpec.all {
            let value = leaves[spec.key]
            switch spec.defaultValue {
            case .int(let number): XCTAssertEqual((value as? NSNumber)?.intValue, number, spec.key)
            case .double(let number): XCTAssertEqual((value as? NSNumber)?.doubleValue, number, spec.key)
            case .bool(let flag): XCTAssertEqual(value as? Bool, flag, spec.key)
            case .string(let text): XCTAssertEqual(value as? String, text, spec.key)
            case .stringArray(let texts): XCTAssertEqual(value as? [String], texts, spec.key)
            default: XCTFail("unexpected default kind for \(spec.key)")
            }
        }
    }

    func test_anEmptyFileObjectLoadsTheDefaults() throws {
        assertSame(try load("{}"), try SwitchboardConfiguration.defaults)
    }

    func test_aMissingFileFailsNamingThePath() {
        XCTAssertThrowsError(try ConfigurationLoader.load(filePath: "/nonexistent/switchboard.json", environment: [:])) { error in
            XCTAssertEqual((error as? SwitchboardError)?.code, .invalidConfiguration)
            XCTAssertTrue((error as? SwitchboardError)?.message.contains("/nonexistent/switchboard.json") == true, "\(error)")
        }
    }

    // MARK: File values

    func test_fileValuesReplaceTheDefaults() throws {
        let configuration = try load(#"""
            {"server": {"port": 8080, "host": "127.0.0.1"},
             "peerjs": {"key": "k", "expire_timeout": 9999, "allow_discovery": true, "cors_origins": ["https://a.example"],
                        "queue": {"per_destination": 3}, "malformed": {"rate": 2.5}},
             "log": {"level": "debug"}}
            """#)
        XCTAssertEqual(configuration.transport.listener(.client)?.port, 8080)
        XCTAssertEqual(configuration.transport.listener(.client)?.host, "127.0.0.1")
        XCTAssertEqual(configuration.relay.key, "k")
        XCTAssertEqual(configuration.relay.expireTimeout, .milliseconds(9999))
        XCTAssertTrue(configuration.relay.allowDiscovery)
        XCTAssertEqual(configuration.peerJSRoutes.corsOrigins, ["https://a.example"])
        XCTAssertEqual(configuration.relay.maxQueuedPerDestination, 3)
        XCTAssertEqual(configuration.relay.malformedRate, 2.5)
        XCTAssertEqual(configuration.logLevel, .debug)
        // Untouched keys keep their defaults.
        XCTAssertEqual(configuration.relay.maxQueuedPerSender, 1024)
    }

    func test_aDoubleKeyAcceptsAWholeNumber() throws {
        XCTAssertEqual(try load(#"{"peerjs":{"malformed":{"burst":7}}}"#).relay.malformedBurst, 7)
    }

    func test_aCustomPathMovesTheWebSocketPath() throws {
        let configuration = try load(#"{"peerjs":{"path":"/myapp/"}}"#)
        XCTAssertEqual(configuration.peerJSRoutes.mountPath, "/myapp/")
        XCTAssertEqual(configuration.peerJSRoutes.webSocketPath, "/myapp/peerjs")
        XCTAssertEqual(configuration.transport.listener(.client)?.webSocketPaths, ["/myapp/peerjs", "/v1/connect"])
    }

    func test_theCallProtocolPathCanMoveOrBeTurnedOffButNotCollideWithPeerJS() throws {
        XCTAssertEqual(try load(#"{"connect":{"path":"/calls"}}"#).transport.listener(.client)?.webSocketPaths, ["/peerjs", "/calls"])
        let off = try load(#"{"connect":{"path":""}}"#)
        XCTAssertNil(off.connectPath)
        XCTAssertEqual(off.transport.listener(.client)?.webSocketPaths, ["/peerjs"])
        assertFails(#"{"connect":{"path":"calls"}}"#, naming: "connect.path")
        assertFails(#"{"connect":{"path":"/peerjs"}}"#, naming: "connect.path")
        XCTAssertEqual(try load(#"{"testing":{"echo_path":"/echo"}}"#).echoPath, "/echo")
        XCTAssertNil(try load(nil).echoPath, "the echo protocol is off unless asked for")
        assertFails(#"{"testing":{"echo_path":"/v1/connect"}}"#, naming: "testing.echo_path")
    }

    func test_callTypeSettingsComeFromTheirKeys() throws {
        let configuration = try load(#"{"call_types":{"ringing":{"max_participants":2,"busy_policy":"ring","incoming_timeout_ms":5000}},"limits":{"connections_per_user":3}}"#)
        let ringing = try XCTUnwrap(configuration.calls.types["ringing"])
        XCTAssertEqual(ringing.maxParticipants, 2)
        XCTAssertEqual(ringing.busyPolicy, .ring)
        XCTAssertEqual(ringing.incomingTimeout, .seconds(5))
        XCTAssertEqual(configuration.calls.types["default"], .meeting)
        XCTAssertEqual(configuration.calls.connectionsPerUser, 3)
        assertFails(#"{"call_types":{"ringing":{"busy_policy":"maybe"}}}"#, naming: "call_types.ringing.busy_policy")
        assertFails(#"{"call_types":{"default":{"max_participants":0}}}"#, naming: "call_types.default.max_participants")
    }

    func test_anUnknownKeyInTheFileFailsNamingTheKey() {
        assertFails(#"{"peerjs":{"expire_timeot":5000}}"#, naming: "peerjs.expire_timeot")
    }

    func test_anUnknownSectionInTheFileFailsNamingTheKey() {
        assertFails(#"{"sfu":{"enabled":true}}"#, naming: "sfu.enabled")
    }

    func test_aValueWhereASectionBelongsFailsNamingTheKey() {
        assertFails(#"{"peerjs":5}"#, naming: "'peerjs'")
    }

    func test_aSectionWhereAValueBelongsFailsNamingTheKey() {
        assertFails(#"{"peerjs":{"key":{"value":"x"}}}"#, naming: "peerjs.key.value")
    }

    func test_aStringWhereAnIntegerBelongsFailsNamingTheKey() {
        assertFails(#"{"peerjs":{"expire_timeout":"soon"}}"#, naming: "peerjs.expire_timeout")
    }

    func test_aFractionWhereAnIntegerBelongsFailsNamingTheKey() {
        assertFails(#"{"server":{"port":80.5}}"#, naming: "server.port")
    }

    func test_aStringWhereABooleanBelongsFailsNamingTheKey() {
        assertFails(#"{"peerjs":{"allow_discovery":"yes"}}"#, naming: "peerjs.allow_discovery")
    }

    func test_aNumberWhereAStringBelongsFailsNamingTheKey() {
        assertFails(#"{"peerjs":{"key":5}}"#, naming: "peerjs.key")
    }

    func test_aStringWhereAListBelongsFailsNamingTheKey() {
        assertFails(#"{"peerjs":{"cors_origins":"https://a.example"}}"#, naming: "peerjs.cors_origins")
    }

    func test_aListOfNonStringsFailsNamingTheKey() {
        assertFails(#"{"peerjs":{"cors_origins":[1]}}"#, naming: "peerjs.cors_origins")
    }

    func test_aNullValueFailsNamingTheKey() {
        assertFails(#"{"peerjs":{"key":null}}"#, naming: "peerjs.key")
    }

    func test_aPortAboveTheRangeFailsNamingTheKeyAndTheBounds() {
        assertFails(#"{"server":{"port":70000}}"#, naming: "server.port", "between 0 and 65535", "70000")
    }

    func test_anExpireTimeoutOfZeroFailsNamingTheKey() {
        assertFails(#"{"peerjs":{"expire_timeout":0}}"#, naming: "peerjs.expire_timeout", "between 1 and 3600000")
    }

    func test_aNestedQueueBoundOutOfRangeFailsNamingTheKey() {
        assertFails(#"{"peerjs":{"queue":{"total_bytes":10}}}"#, naming: "peerjs.queue.total_bytes")
    }

    func test_aDoubleOutOfRangeFailsNamingTheKey() {
        assertFails(#"{"peerjs":{"malformed":{"burst":0.5}}}"#, naming: "peerjs.malformed.burst")
    }

    func test_invalidJSONFails() {
        assertFails(#"{"peerjs": }"#, naming: "not valid JSON")
        assertFails("", naming: "not valid JSON")
    }

    func test_aFileThatIsNotAnObjectFails() {
        assertFails("[1, 2]", naming: "must hold a JSON object")
    }

    func test_aCertificateWithoutAKeyFails() {
        assertFails(#"{"server":{"tls":{"cert_file":"/etc/cert.pem"}}}"#, naming: "server.tls.cert_file", "server.tls.key_file")
    }

    func test_aKeyWithoutACertificateFails() {
        assertFails(#"{"server":{"tls":{"key_file":"/etc/key.pem"}}}"#, naming: "server.tls.cert_file", "server.tls.key_file")
    }

    func test_aCertificateAndKeyTogetherEnableTLS() throws {
        // Any readable files do for loading; the transport reads them as PEM at start.
        let configuration = try load(#"{"server":{"tls":{"cert_file":"/etc/hostname","key_file":"/etc/passwd"}}}"#)
        XCTAssertEqual(configuration.transport.listener(.client)?.tlsCertificateFile, "/etc/hostname")
        XCTAssertEqual(configuration.transport.listener(.client)?.tlsPrivateKeyFile, "/etc/passwd")
        XCTAssertEqual(configuration.transport.listener(.client)?.usesTLS, true)
    }

    func test_aLogLevelOutsideTheAllowedListFailsNamingTheKey() {
        assertFails(#"{"log":{"level":"verbose"}}"#, naming: "log.level", "verbose")
    }

    func test_everyAllowedLogLevelLoads() throws {
        let expected: [(String, Logger.Level)] = [
            ("trace", .trace), ("debug", .debug), ("info", .info), ("notice", .notice), ("warning", .warning),
            ("error", .error), ("critical", .critical),
        ]
        for (name, level) in expected {
            XCTAssertEqual(try load(#"{"log":{"level":""# + name + #""}}"#).logLevel, level, name)
        }
    }

    func test_anEmptyPeerJSKeyFails() {
        assertFails(#"{"peerjs":{"key":""}}"#, naming: "peerjs.key")
    }

    // MARK: Environment

    func test_anEnvironmentVariableWinsOverTheFile() throws {
        let configuration = try load(#"{"peerjs":{"expire_timeout":9999}}"#, environment: ["SWITCHBOARD_PEERJS_EXPIRE_TIMEOUT": "1234"])
        XCTAssertEqual(configuration.relay.expireTimeout, .milliseconds(1234))
    }

    func test_anEnvironmentVariableWinsOverTheDefault() throws {
        XCTAssertEqual(try load(environment: ["SWITCHBOARD_SERVER_PORT": "9100"]).transport.listener(.client)?.port, 9100)
    }

    func test_environmentVariablesReachNestedKeys() throws {
        let configuration = try load(environment: [
            "SWITCHBOARD_PEERJS_QUEUE_PER_DESTINATION": "7",
            "SWITCHBOARD_SERVER_TLS_CERT_FILE": "/etc/hostname",
            "SWITCHBOARD_SERVER_TLS_KEY_FILE": "/etc/passwd",
        ])
        XCTAssertEqual(configuration.relay.maxQueuedPerDestination, 7)
        XCTAssertEqual(configuration.transport.listener(.client)?.tlsCertificateFile, "/etc/hostname")
        XCTAssertEqual(configuration.transport.listener(.client)?.tlsPrivateKeyFile, "/etc/passwd")
    }

    func test_environmentVariablesAreParsedToTheKeysType() throws {
        let configuration = try load(environment: [
            "SWITCHBOARD_PEERJS_ALLOW_DISCOVERY": "true",
            "SWITCHBOARD_PEERJS_MALFORMED_RATE": "0.5",
            "SWITCHBOARD_PEERJS_CORS_ORIGINS": "https://a.example,https://b.example",
            "SWITCHBOARD_LOG_LEVEL": "error",
        ])
        XCTAssertTrue(configuration.relay.allowDiscovery)
        XCTAssertEqual(configuration.relay.malformedRate, 0.5)
        XCTAssertEqual(configuration.peerJSRoutes.corsOrigins, ["https://a.example", "https://b.example"])
        XCTAssertEqual(configuration.logLevel, .error)
    }

    func test_anEnvironmentVariableOfTheWrongTypeFailsNamingTheKey() {
        assertFails(environment: ["SWITCHBOARD_PEERJS_EXPIRE_TIMEOUT": "soon"], naming: "peerjs.expire_timeout")
    }

    func test_anEnvironmentVariableOutOfRangeFailsNamingTheKey() {
        assertFails(environment: ["SWITCHBOARD_SERVER_PORT": "65536"], naming: "server.port", "65536")
    }

    func test_anUnknownSwitchboardVariableFailsNamingIt() {
        assertFails(environment: ["SWITCHBOARD_PEERJS_EXPIRE_TIMEOT": "1"], naming: "SWITCHBOARD_PEERJS_EXPIRE_TIMEOT")
    }

    func test_theConfigFileVariableIsNotAnUnknownVariable() throws {
        XCTAssertEqual(ConfigurationLoader.fileVariable, "SWITCHBOARD_CONFIG")
        XCTAssertEqual(try load(environment: ["SWITCHBOARD_CONFIG": "/etc/switchboard.json"]).relay, RelayConfiguration())
    }

    func test_otherEnvironmentVariablesAreIgnored() throws {
        let configuration = try load(environment: ["PATH": "/usr/bin", "PEERJS_EXPIRE_TIMEOUT": "1", "switchboard_server_port": "1"])
        assertSame(configuration, try SwitchboardConfiguration.defaults)
    }

    func test_everyKeysEnvironmentNameIsSwitchboardPlusTheKeyInUpperCase() {
        let names = Dictionary(uniqueKeysWithValues: ConfigKeySpec.all.map { ($0.key, $0.environmentName) })
        XCTAssertEqual(names["peerjs.expire_timeout"], "SWITCHBOARD_PEERJS_EXPIRE_TIMEOUT")
        XCTAssertEqual(names["peerjs.queue.per_destination"], "SWITCHBOARD_PEERJS_QUEUE_PER_DESTINATION")
        XCTAssertEqual(names["server.tls.cert_file"], "SWITCHBOARD_SERVER_TLS_CERT_FILE")
        XCTAssertEqual(Set(names.values).count, ConfigKeySpec.all.count, "environment names must be unique")
    }

    // MARK: Command line

    func test_commandLineOverridesWinOverTheEnvironmentAndTheFile() throws {
        let configuration = try load(
            #"{"peerjs":{"expire_timeout":9999}}"#, environment: ["SWITCHBOARD_PEERJS_EXPIRE_TIMEOUT": "1234"],
            overrides: ["peerjs.expire_timeout": .int(42)])
        XCTAssertEqual(configuration.relay.expireTimeout, .milliseconds(42))
    }

    func test_commandLineOverridesOfEachTypeApply() throws {
        let configuration = try load(overrides: [
            "server.port": .int(0), "peerjs.allow_discovery": .bool(true), "peerjs.key": .string("cli"),
            "peerjs.cors_origins": .stringArray(["https://cli.example"]),
        ])
        XCTAssertEqual(configuration.transport.listener(.client)?.port, 0)
        XCTAssertTrue(configuration.relay.allowDiscovery)
        XCTAssertEqual(configuration.relay.key, "cli")
        XCTAssertEqual(configuration.peerJSRoutes.corsOrigins, ["https://cli.example"])
    }

    func test_anUnknownCommandLineOverrideFailsNamingIt() {
        assertFails(overrides: ["peerjs.nope": .int(1)], naming: "peerjs.nope")
    }

    func test_anOutOfRangeCommandLineOverrideFailsNamingTheKey() {
        assertFails(overrides: ["peerjs.concurrent_limit": .int(0)], naming: "peerjs.concurrent_limit")
    }

    func test_theEnvironmentIsCheckedEvenWhenTheCommandLineSetsTheKey() {
        assertFails(
            environment: ["SWITCHBOARD_BOGUS": "1"], overrides: ["peerjs.expire_timeout": .int(42)], naming: "SWITCHBOARD_BOGUS")
    }
}
