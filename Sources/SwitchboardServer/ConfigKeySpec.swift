import Configuration

/// One configuration key: its dotted name, type, bounds and default. The table in
/// ``ConfigKeySpec/all`` is the only place keys are declared.
public struct ConfigKeySpec: Sendable {
    /// The value types a key can hold.
    public enum Kind: Sendable {
        case int(ClosedRange<Int>)
        case double(ClosedRange<Double>)
        case bool
        case string(allowed: [String]?)
        case stringArray
    }

    /// Dotted key, as in the JSON file (`peerjs.expire_timeout`).
    public let key: String
    public let kind: Kind
    public let defaultValue: ConfigContent
    /// Never logged or printed when true.
    public let isSecret: Bool
    /// One line for config/README.md.
    public let summary: String

    init(_ key: String, _ kind: Kind, _ defaultValue: ConfigContent, secret: Bool = false, _ summary: String) {
        self.key = key
        self.kind = kind
        self.defaultValue = defaultValue
        self.isSecret = secret
        self.summary = summary
    }

    /// The environment variable that overrides this key: `SWITCHBOARD_` + key in upper case,
    /// dots as underscores.
    public var environmentName: String {
        "SWITCHBOARD_" + key.uppercased().replacingOccurrences(of: ".", with: "_")
    }

    /// The key without the `SWITCHBOARD_` prefix, as swift-configuration's environment provider
    /// encodes it.
    var environmentSuffix: String { String(environmentName.dropFirst("SWITCHBOARD_".count)) }
}

import Foundation
