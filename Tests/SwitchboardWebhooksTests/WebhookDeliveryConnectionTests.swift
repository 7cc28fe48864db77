import Foundation
import Logging
import SwitchboardApp
import SwitchboardCore
import SwitchboardTesting
import SwitchboardWebhooks
import XCTest

/// The delivery worker on the sender's own event loop (as the daemon runs it) against a real
/// receiver: every message arrives once, and the attempts reuse the client's keep-alive
/// connections instead of opening one each.
final class WebhookDeliveryConnectionTests: XCTestCase {
    private let secret = "whsec_" + Data(repeating: 9, count: 32).base64EncodedString()

    func test_manyMessagesGoOverAFewKeptAliveConnections() async throws {
        let server = try await WebhookTestServer.start { _ in .respond(204) }
        let sender = WebhookSender(connectTimeout: .seconds(2), connectionsPerHost: 4)
        let store = InMemoryCallStore()
        let settings = WebhookSettings(
            endpoints: [WebhookEndpoint(name: "main", url: server.url("/hook"), secret: secret)], timeout: .seconds(5), maxInFlight: 4)
        let dispatcher = WebhookDispatcher(
            settings: settings, store: store, poster: sender, executor: sender.executor, wallClock: { Date() }, logger: Logger(label: "test"))
        try dispatcher.start()

        // 20 calls of 10 events each: 4 lanes in flight at a time, 200 attempts.
        var mutations: [CallMutation] = []
        for call in 0..<20 {
            for seq in 1...10 {
                let cid = "default:c\(call)"
                let message = WebhookMessage(
                    id: "msg_\(call)_\(seq)", type: .participantJoined, createdAt: Date(), lane: cid, seq: Int64(seq),
                    data: .object(["call_cid": .string(cid), "seq": .number(Double(seq))]))
                mutations.append(.enqueueWebhook(message, endpoints: ["main"]))
            }
        }
        try store.apply(mutations)
        dispatcher.committed(PendingWebhook.created(by: mutations))

        let deadline = Date().addingTimeInterval(30)
        while server.requests.count < 200 && Date() < deadline {
            try await Task.sleep(for: .milliseconds(20))
        }
        dispatcher.stop()
        XCTAssertTrue(dispatcher.waitForIdle(timeout: .now() + .seconds(5)))
        await sender.shutdown()
        try await server.stop()

        let ids = server.requests.compactMap { $0.headers.first(name: "webhook-id") }
        XCTAssertEqual(ids.count, 200)
        XCTAssertEqual(Set(ids).count, 200, "each message once")
        XCTAssertLessThanOrEqual(server.connections, 4, "attempts reuse the kept-alive connections (at most max_in_flight)")
        XCTAssertEqual(try store.pendingWebhooks().count, 0, "every outcome committed")
    }
}
