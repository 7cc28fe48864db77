import Foundation
import SwitchboardCore

/// The in-memory twin of ``HTTPPoster``: answers each POST from a script (per URL) and records
/// every request, so adapter tests replay recorded answers without a server.
public final class ScriptedHTTPPoster: HTTPPoster, @unchecked Sendable {
    /// What one POST gets.
    public enum Answer: Sendable {
        case reply(status: Int, body: [UInt8])
        case error(HTTPPostError)
    }

    private let lock = NSLock()
    private var answers: [String: Answer] = [:]
    private var recorded: [(url: String, body: [UInt8])] = []

    public init() {}

    /// Every POST to `url` gets `answer` from now on.
    public func answer(_ url: String, with answer: Answer) { lock.withLock { answers[url] = answer } }

    /// Every POST to `url` gets `body` (a 200 unless `status` says otherwise).
    public func answer(_ url: String, json body: String, status: Int = 200) {
        answer(url, with: .reply(status: status, body: Array(body.utf8)))
    }

    /// The requests made so far, oldest first.
    public var requests: [(url: String, body: [UInt8])] { lock.withLock { recorded } }

    /// The JSON object of the `index`-th request.
    public func requestObject(_ index: Int) -> [String: Any]? {
        guard let body = lock.withLock({ index < recorded.count ? recorded[index].body : nil }) else { return nil }
        return (try? JSONSerialization.jsonObject(with: Data(body))) as? [String: Any]
    }

    public func post(_ url: String, body: [UInt8], timeout: Duration) async throws(HTTPPostError) -> (status: Int, body: [UInt8]) {
        let answer = lock.withLock { () -> Answer? in
            recorded.append((url, body))
            return answers[url]
        }
        switch answer {
        case .reply(let status, let body): return (status, body)
        case .error(let error): throw error
        case nil: throw .failed("connection refused (no script for \(url))")
        }
    }
}
