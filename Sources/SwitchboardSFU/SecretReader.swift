import Foundation
import SwitchboardCore

/// Reads a secret from its ``SecretSource`` each time it is needed, so a rotated file or a
/// restarted daemon's environment is picked up; the value is never logged.
public struct SecretReader: Sendable {
    let environment: @Sendable (String) -> String?
    let readFile: @Sendable (String) -> String?

    public init(
        environment: @escaping @Sendable (String) -> String? = { ProcessInfo.processInfo.environment[$0] },
        readFile: @escaping @Sendable (String) -> String? = { try? String(contentsOfFile: $0, encoding: .utf8) }
    ) {
        self.environment = environment
        self.readFile = readFile
    }

    /// The secret, without a trailing newline; `nil` when the variable is unset, the file
    /// unreadable, or the value empty.
    public func read(_ source: SecretSource) -> String? {
        let raw: String? =
            switch source {
            case .environment(let name): environment(name)
            case .file(let path): readFile(path)
            }
        guard var value = raw else { return nil }
        while value.last == "\n" || value.last == "\r" { value.removeLast() }
        return value.isEmpty ? nil : value
    }
}
