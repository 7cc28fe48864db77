import Foundation
import XCTest

/// docs/swift-client.md shows the quick start that the package compiles
/// (`Examples/QuickStart/QuickStart.swift`, target `switchboard-kit-quickstart`), unchanged.
final class QuickStartDocumentTests: XCTestCase {
    func test_theDocumentShowsTheCompiledQuickStart() throws {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        let source = try String(contentsOf: root.appendingPathComponent("Examples/QuickStart/QuickStart.swift"), encoding: .utf8)
        let document = try String(contentsOf: root.appendingPathComponent("docs/swift-client.md"), encoding: .utf8)
        let start = try XCTUnwrap(document.range(of: "## Quick start"))
        let fence = try XCTUnwrap(document.range(of: "```swift\n", range: start.upperBound..<document.endIndex))
        let end = try XCTUnwrap(document.range(of: "```\n", range: fence.upperBound..<document.endIndex))
        XCTAssertEqual(String(document[fence.upperBound..<end.lowerBound]), source)
    }
}
