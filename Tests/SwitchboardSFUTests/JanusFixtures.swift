import Foundation

/// Janus 1.1.2's recorded answers (Fixtures/janus, made by Tests/e2e/record_janus_answers.py).
enum JanusFixtures {
    static let directory = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("Fixtures/janus")

    /// The recorded body of `name` (without `.json`).
    static func body(_ name: String) throws -> String {
        try String(contentsOf: directory.appendingPathComponent("\(name).json"), encoding: .utf8)
    }

    /// The transaction id the recording used, so a client can be made to send the same one.
    static func transaction(_ name: String) -> String { "rec-\(name)" }
}
