import Configuration
import Foundation
import SwitchboardServer
import XCTest

/// config/README.md is the operators' key table: it must name every key, its environment
/// variable and its default (checked against the daemon's), and no key the daemon does not read.
final class ConfigDocumentationTests: XCTestCase {
    private var readme: String {
        get throws {
            let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
            return try String(contentsOf: root.appendingPathComponent("config/README.md"), encoding: .utf8)
        }
    }

    func test_everyKeyIsDocumentedWithItsEnvironmentVariable() throws {
        let text = try readme
        for spec in ConfigKeySpec.all {
            let row = text.split(separator: "\n").first { $0.hasPrefix("| `\(spec.key)` |") }
            XCTAssertNotNil(row, "config/README.md has no row for \(spec.key)")
            XCTAssertTrue(row?.contains("`\(spec.environmentName)`") == true, "row for \(spec.key) lacks \(spec.environmentName)")
        }
    }

    /// The default column says what the daemon uses when the key is not set (numbers may carry
    /// thousands separators).
    func test_everyDocumentedDefaultIsTheDaemonsDefault() throws {
        let text = try readme
        for spec in ConfigKeySpec.all {
            guard let row = text.split(separator: "\n").first(where: { $0.hasPrefix("| `\(spec.key)` |") }) else { continue }
            let columns = row.split(separator: "|", omittingEmptySubsequences: false).map { $0.trimmingCharacters(in: .whitespaces) }
            let documented = columns[3].trimmingCharacters(in: CharacterSet(charactersIn: "`")).replacingOccurrences(of: ",", with: "")
            XCTAssertEqual(documented, Self.render(spec.defaultValue), "default of \(spec.key)")
        }
    }

    private static func render(_ value: ConfigContent) -> String {
        switch value {
        case .string(let text): "\"\(text)\""
        case .int(let number): String(number)
        case .double(let number): number == number.rounded() ? String(Int(number)) : String(number)
        case .bool(let flag): String(flag)
        case .stringArray(let items): "[" + items.map { "\"\($0)\"" }.joined(separator: ", ") + "]"
        default: "\(value)"
        }
    }

    func test_theKeyTableNamesNoKeyTheDaemonDoesNotRead() throws {
        let known = Set(ConfigKeySpec.all.map(\.key))
        let documented = try readme.split(separator: "\n").compactMap { line -> String? in
            guard line.hasPrefix("| `") else { return nil }
            return line.dropFirst(3).split(separator: "`").first.map(String.init)
        }
        XCTAssertEqual(Set(documented), known)
    }
}
