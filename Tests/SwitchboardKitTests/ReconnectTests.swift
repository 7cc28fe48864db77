import Foundation
import NIOCore
import NIOPosix
import SwitchboardKit
import Synchronization
import XCTest

/// The client keeps trying when what answers is not a daemon: a balancer with no server behind
/// it (it accepts, then closes at once), or a host that accepts and never answers. Every
/// attempt must end, so the next one comes; a hung attempt would leave the app "reconnecting"
/// for good after a failover.
final class ReconnectTests: XCTestCase {
    /// A listener on 127.0.0.1 that counts connections and closes each at once, or never.
    private final class Listener: @unchecked Sendable {
        let accepted = Mutex(0)
        let held = Mutex<[any Channel]>([])
        var channel: (any Channel)!

        init(closing: Bool) throws {
            channel = try ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
                .childChannelInitializer { [self] child in
                    accepted.withLock { $0 += 1 }
                    if closing { return child.close() }
                    held.withLock { $0.append(child) }
                    return child.eventLoop.makeSucceededVoidFuture()
                }
                .bind(host: "127.0.0.1", port: 0).wait()
        }

        var url: URL { URL(string: "ws://127.0.0.1:\(channel.localAddress!.port!)/v1/connect")! }

        func close() {
            for child in held.withLock({ $0 }) { child.close(promise: nil) }
            try? channel.close().wait()
        }
    }

    private func client(_ url: URL, requestTimeout: Duration = .seconds(10)) -> SwitchboardClient {
        SwitchboardClient(
            url: url, user: UserInfo(id: "alice"), token: UserToken(rawValue: "t"),
            config: ClientConfig(requestTimeout: requestTimeout, backoff: Backoff(base: .milliseconds(10), maximum: .milliseconds(20), floor: .milliseconds(5))),
            tokenProvider: { UserToken(rawValue: "t") })
    }

    private func waitFor(_ listener: Listener, attempts: Int, within timeout: Duration) async {
        let deadline = ContinuousClock.now + timeout
        while ContinuousClock.now < deadline {
            if listener.accepted.withLock({ $0 }) >= attempts { return }
            try? await Task.sleep(for: .milliseconds(10))
        }
        XCTFail("only \(listener.accepted.withLock { $0 }) attempts within \(timeout), \(attempts) wanted")
    }

    func test_aServerThatClosesBeforeTheUpgradeIsTriedAgainAndAgain() async throws {
        let listener = try Listener(closing: true)
        defer { listener.close() }
        let client = client(listener.url)
        let connecting = Task { try? await client.connect() }
        await waitFor(listener, attempts: 20, within: .seconds(10))
        await client.disconnect()
        await connecting.value
    }

    /// A server that takes the connection and says nothing: the attempt ends at the request
    /// timeout and the next one comes.
    func test_aServerThatNeverAnswersIsGivenUpAtTheRequestTimeout() async throws {
        let listener = try Listener(closing: false)
        defer { listener.close() }
        let client = client(listener.url, requestTimeout: .milliseconds(300))
        let connecting = Task { try? await client.connect() }
        await waitFor(listener, attempts: 3, within: .seconds(10))
        await client.disconnect()
        await connecting.value
    }
}
