import Foundation
import SwitchboardKit
import XCTest

/// SwitchboardKit clients against the real daemon (the same composition root as the daemon).
extension TestDaemon {
    /// A client for `user` whose token provider mints through the admin API, counting calls.
    func kitClient(
        _ user: String, ttlSeconds: Int = 600, config: ClientConfig = ClientConfig(backoff: Backoff(base: .milliseconds(20), maximum: .milliseconds(200))),
        provided: ProviderCount? = nil
    ) throws -> SwitchboardClient {
        let first = try mintToken(user: user, ttlSeconds: ttlSeconds)
        let port = port
        let mint: @Sendable () throws -> String = { [self] in try self.mintToken(user: user, ttlSeconds: 600) }
        return SwitchboardClient(
            url: URL(string: "ws://127.0.0.1:\(port)/v1/connect")!, user: UserInfo(id: user), token: UserToken(rawValue: first), config: config,
            tokenProvider: {
                provided?.increment()
                return UserToken(rawValue: try mint())
            })
    }
}

extension TestDaemon: @unchecked Sendable {}

final class ProviderCount: @unchecked Sendable {
    private let lock = NSLock()
    private var value = 0
    func increment() { lock.withLock { value += 1 } }
    var count: Int { lock.withLock { value } }
}

/// Polls `condition` every 5 ms until it holds or `timeout` passes (then fails the test).
@MainActor
func eventually(
    _ what: @autoclosure () -> String = "condition", timeout: Duration = .seconds(5), file: StaticString = #filePath, line: UInt = #line,
    _ condition: @MainActor () async -> Bool
) async {
    let deadline = ContinuousClock.now + timeout
    while ContinuousClock.now < deadline {
        if await condition() { return }
        try? await Task.sleep(for: .milliseconds(5))
    }
    XCTFail("timed out waiting for \(what())", file: file, line: line)
}
