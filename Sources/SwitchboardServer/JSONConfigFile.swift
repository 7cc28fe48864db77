import Configuration
import Foundation
import SwitchboardCore

/// Flattens a JSON config file into dotted keys with typed values.
enum JSONConfigFile {
    /// A JSON value as read from the file.
    private enum Value: Decodable {
        case bool(Bool), int(Int), double(Double), string(String), array([Value]), object([String: Value]), null

        init(from decoder: any Decoder) throws {
            let container = try decoder.singleValueContainer()
            if container.decodeNil() { self = .null }
            else if let value = try? container.decode(Bool.self) { self = .bool(value) }
            else if let value = try? container.decode(Int.self) { self = .int(value) }
            else if let value = try? container.decode(Double.self) { self = .double(value) }
            else if let value = try? container.decode(String.self) { self = .string(value) }
            else if let value = try? container.decode([Value].self) { self = .array(value) }
            else { self = .object(try container.decode([String: Value].self)) }
        }
    }

    static func flatten(_ data: Data, source: String) throws -> [(String, ConfigContent)] {
        let root: Value
        do {
            root = try JSONDecoder().decode(Value.self, from: data)
        } catch {
            throw SwitchboardError(.invalidConfiguration, "\(source) is not valid JSON: \(error)")
        }
        guard case .object(let object) = root else {
            throw SwitchboardError(.invalidConfiguration, "\(source) must hold a JSON object")
        }
        var result: [(String, ConfigContent)] = []
        try flatten(object, prefix: "", into: &result)
        return result
    }

    private static func flatten(_ object: [String: Value], prefix: String, into result: inout [(String, ConfigContent)]) throws {
        for (name, value) in object.sorted(by: { $0.key < $1.key }) {
            let key = prefix.isEmpty ? name : prefix + "." + name
            switch value {
            case .object(let nested): try flatten(nested, prefix: key, into: &result)
            case .bool(let flag): result.append((key, .bool(flag)))
            case .int(let number): result.append((key, .int(number)))
            case .double(let number): result.append((key, .double(number)))
            case .string(let text): result.append((key, .string(text)))
            case .array(let items):
                let strings = items.compactMap { if case .string(let text) = $0 { text } else { nil } }
                guard strings.count == items.count else {
                    throw SwitchboardError(.invalidConfiguration, "\(key): arrays must hold strings")
                }
                result.append((key, .stringArray(strings)))
            case .null:
                throw SwitchboardError(.invalidConfiguration, "\(key): null is not a value; remove the key for its default")
            }
        }
    }
}
