import Foundation
import SwitchboardServer
import XCTest

/// config/README.md is the operators' key table: it must name every key, its environment
/// variable and its default, and no key the daemon does not read.
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

    func test_theKeyTableNamesNoKeyTheDaemonDoesNotRead() throws {
        let known = Set(ConfigKeySpec.all.map(\.key))
        let documented = try readme.split(separator: "\n").compactMap { line -> String? in
            guard line.hasPrefix("| `") else { return nil }
            return line.dropFirst(3).split(separator: "`").first.map(String.init)
        }
        XCTAssertEqual(Set(documented), known)
    }
}
