import Configuration
import SwitchboardCore

/// Typed, bounds-checked reads of the keys in ``ConfigKeySpec/all``. Each read names its key
/// in the error it throws.
struct ConfigValues {
    let reader: ConfigReader
    let specs: [String: ConfigKeySpec]

    func int(_ key: String) throws -> Int {
        guard case .int(let range) = spec(key).kind else { preconditionFailure("\(key) is not an int") }
        let value = try wrap(key) { try reader.requiredInt(forKey: ConfigKey(key)) }
        guard range.contains(value) else {
            throw SwitchboardError(.invalidConfiguration, "\(key): must be between \(range.lowerBound) and \(range.upperBound) (got \(value))")
        }
        return value
    }

    func double(_ key: String) throws -> Double {
        guard case .double(let range) = spec(key).kind else { preconditionFailure("\(key) is not a double") }
        let value = try wrap(key) {
            do {
                return try reader.requiredDouble(forKey: ConfigKey(key))
            } catch {
                guard let whole = try? reader.requiredInt(forKey: ConfigKey(key)) else { throw error }
                return Double(whole)
            }
        }
        guard range.contains(value) else {
            throw SwitchboardError(.invalidConfiguration, "\(key): must be between \(range.lowerBound) and \(range.upperBound) (got \(value))")
        }
        return value
    }

    func bool(_ key: String) throws -> Bool {
        try wrap(key) { try reader.requiredBool(forKey: ConfigKey(key)) }
    }

    func string(_ key: String) throws -> String {
        let value = try wrap(key) { try reader.requiredString(forKey: ConfigKey(key), isSecret: spec(key).isSecret) }
        if case .string(let allowed?) = spec(key).kind, !allowed.contains(value) {
            throw SwitchboardError(.invalidConfiguration, "\(key): must be one of \(allowed.joined(separator: ", ")) (got \(value))")
        }
        return value
    }

    func strings(_ key: String) throws -> [String] {
        try wrap(key) { try reader.requiredStringArray(forKey: ConfigKey(key)) }
    }

    func milliseconds(_ key: String) throws -> Duration { .milliseconds(try int(key)) }

    private func spec(_ key: String) -> ConfigKeySpec {
        guard let spec = specs[key] else { preconditionFailure("undeclared config key \(key)") }
        return spec
    }

    private func wrap<T>(_ key: String, _ read: () throws -> T) throws -> T {
        do {
            return try read()
        } catch {
            throw SwitchboardError(.invalidConfiguration, "\(key): \(error) (\(spec(key).environmentName))")
        }
    }
}
