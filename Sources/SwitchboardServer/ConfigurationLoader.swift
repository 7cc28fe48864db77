import Configuration
import Foundation
import Logging
import SwitchboardCore
import SwitchboardTransport

/// Loads configuration: defaults in code, then the JSON file, then `SWITCHBOARD_*`
/// environment variables, then command-line overrides (highest wins), through
/// swift-configuration. Unknown keys and bad values fail with the key's name.
public enum ConfigurationLoader {
    /// The environment variable naming the config file (read by the CLI).
    public static let fileVariable = "SWITCHBOARD_CONFIG"

    /// Loads from a file path (or none), the environment and overrides.
    public static func load(
        filePath: String?, environment: [String: String] = ProcessInfo.processInfo.environment,
        overrides: [String: ConfigContent] = [:]
    ) throws -> SwitchboardConfiguration {
        var contents: Data?
        if let filePath {
            do {
                contents = try Data(contentsOf: URL(fileURLWithPath: filePath))
            } catch {
                throw SwitchboardError(.invalidConfiguration, "cannot read config file \(filePath): \(error.localizedDescription)")
            }
        }
        return try load(fileContents: contents, environment: environment, overrides: overrides, source: filePath ?? "")
    }

    /// Loads from JSON bytes (or none), the environment and overrides.
    public static func load(
        fileContents: Data?, environment: [String: String], overrides: [String: ConfigContent] = [:], source: String = "config"
    ) throws -> SwitchboardConfiguration {
        let specs = Dictionary(uniqueKeysWithValues: ConfigKeySpec.all.map { ($0.key, $0) })
        var fileValues: [AbsoluteConfigKey: ConfigValue] = [:]
        if let fileContents {
            for (key, value) in try JSONConfigFile.flatten(fileContents, source: source) {
                guard let spec = specs[key] else {
                    throw SwitchboardError(.invalidConfiguration, "unknown key '\(key)' in \(source)")
                }
                fileValues[AbsoluteConfigKey(key.split(separator: ".").map(String.init))] = ConfigValue(value, isSecret: spec.isSecret)
            }
        }
        let environmentValues = try mapEnvironment(environment)
        for key in overrides.keys where specs[key] == nil {
            throw SwitchboardError(.invalidConfiguration, "unknown key '\(key)' in command-line overrides")
        }
        let reader = ConfigReader(providers: [
            InMemoryProvider(name: "command line", values: absolute(overrides)),
            EnvironmentVariablesProvider(environmentVariables: environmentValues),
            InMemoryProvider(name: source, values: fileValues),
            InMemoryProvider(name: "defaults", values: absolute(Dictionary(uniqueKeysWithValues: ConfigKeySpec.all.map { ($0.key, $0.defaultValue) }))),
        ])
        return try SwitchboardConfiguration(reading: ConfigValues(reader: reader, specs: specs))
    }

    private static func mapEnvironment(_ environment: [String: String]) throws -> [String: String] {
        let byName = Dictionary(uniqueKeysWithValues: ConfigKeySpec.all.map { ($0.environmentName, $0) })
        var mapped: [String: String] = [:]
        for (name, value) in environment where name.hasPrefix("SWITCHBOARD_") && name != fileVariable {
            guard let spec = byName[name] else {
                throw SwitchboardError(.invalidConfiguration, "unknown environment variable \(name)")
            }
            mapped[spec.environmentSuffix] = value
        }
        return mapped
    }

    private static func absolute(_ values: [String: ConfigContent]) -> [AbsoluteConfigKey: ConfigValue] {
        Dictionary(uniqueKeysWithValues: values.map {
            (AbsoluteConfigKey($0.key.split(separator: ".").map(String.init)), ConfigValue($0.value, isSecret: false))
        })
    }
}
