import ArgumentParser
import Configuration
import Foundation
import SwitchboardServer

/// Options shared by commands that load the configuration, including the PeerJS server's own
/// flags (same names and meanings), layered over the file and the environment.
struct ConfigOptions: ParsableArguments {
    @Option(name: .long, help: "JSON config file (default: $SWITCHBOARD_CONFIG, else built-in defaults).")
    var config: String?

    @Option(name: .customLong("port"), help: "Port to listen on (server.port).")
    var port: Int?
    @Option(name: .customLong("host"), help: "Address to bind (server.host).")
    var host: String?
    @Option(name: .customLong("key"), help: "PeerJS API key (peerjs.key).")
    var key: String?
    @Option(name: .customLong("path"), help: "PeerJS mount path (peerjs.path).")
    var path: String?
    @Option(name: .customLong("expire_timeout"), help: "Milliseconds before undelivered messages expire (peerjs.expire_timeout).")
    var expireTimeout: Int?
    @Option(name: .customLong("alive_timeout"), help: "Milliseconds of silence before a peer is dropped (peerjs.alive_timeout).")
    var aliveTimeout: Int?
    @Option(name: .customLong("concurrent_limit"), help: "Most connected peers (peerjs.concurrent_limit).")
    var concurrentLimit: Int?
    @Flag(name: .customLong("allow_discovery"), help: "Allow GET <path><key>/peers (peerjs.allow_discovery).")
    var allowDiscovery = false
    @Option(name: .customLong("sslkey"), help: "TLS private key file (server.tls.key_file).")
    var sslKey: String?
    @Option(name: .customLong("sslcert"), help: "TLS certificate file (server.tls.cert_file).")
    var sslCert: String?
    @Option(name: .customLong("cors"), parsing: .upToNextOption, help: "Allowed CORS origins (peerjs.cors_origins).")
    var cors: [String] = []
    @Option(name: .customLong("log-level"), help: "Log level (log.level).")
    var logLevel: String?
    @Option(name: .customLong("admin-port"), help: "Port of the admin API (admin.port).")
    var adminPort: Int?
    @Option(name: .customLong("state-dir"), help: "State directory for the SQLite database (store.directory).")
    var stateDirectory: String?
    @Flag(name: .customLong("dev"), help: "Development: serve the demo app at /demo/ and mint tokens at POST /dev/token for loopback clients (http.demo, auth.dev_tokens).")
    var development = false

    /// The command-line layer, keyed by config key.
    var overrides: [String: ConfigContent] {
        var values: [String: ConfigContent] = [:]
        if let port { values["server.port"] = .int(port) }
        if let host { values["server.host"] = .string(host) }
        if let key { values["peerjs.key"] = .string(key) }
        if let path { values["peerjs.path"] = .string(path) }
        if let expireTimeout { values["peerjs.expire_timeout"] = .int(expireTimeout) }
        if let aliveTimeout { values["peerjs.alive_timeout"] = .int(aliveTimeout) }
        if let concurrentLimit { values["peerjs.concurrent_limit"] = .int(concurrentLimit) }
        if allowDiscovery { values["peerjs.allow_discovery"] = .bool(true) }
        if let sslKey { values["server.tls.key_file"] = .string(sslKey) }
        if let sslCert { values["server.tls.cert_file"] = .string(sslCert) }
        if !cors.isEmpty { values["peerjs.cors_origins"] = .stringArray(cors) }
        if let logLevel { values["log.level"] = .string(logLevel) }
        if let adminPort { values["admin.port"] = .int(adminPort) }
        if let stateDirectory { values["store.directory"] = .string(stateDirectory) }
        if development {
            values["http.demo"] = .bool(true)
            values["auth.dev_tokens"] = .bool(true)
        }
        return values
    }

    /// Loads and validates the configuration, throwing the error (for reloads).
    func loadQuietly() throws -> SwitchboardConfiguration {
        let file = config ?? ProcessInfo.processInfo.environment[ConfigurationLoader.fileVariable]
        return try ConfigurationLoader.load(filePath: file, overrides: overrides)
    }

    /// Loads and validates the configuration, or fails naming the bad key.
    func load() throws -> SwitchboardConfiguration {
        let file = config ?? ProcessInfo.processInfo.environment[ConfigurationLoader.fileVariable]
        do {
            return try ConfigurationLoader.load(filePath: file, overrides: overrides)
        } catch {
            var standardError = FileHandle.standardError
            print("switchboard: configuration error: \(error)", to: &standardError)
            throw ExitCode(78)  // EX_CONFIG
        }
    }
}

extension FileHandle: @retroactive TextOutputStream {
    public func write(_ string: String) {
        write(Data(string.utf8))
    }
}
