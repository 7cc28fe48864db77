import Foundation
import Logging
import SwitchboardApp
import SwitchboardCore
import SwitchboardTesting
import XCTest

/// `sfu.down`: written in the failover's transaction, handed to the worker after it.
final class SFUDirectoryWebhookTests: XCTestCase {
    private let wallClock = Date(timeIntervalSince1970: 1_800_000_000)

    private func setUp(routing: WebhookRouting) throws -> (SFUDirectory, InMemorySFUStore, InMemoryCallStore, ManualClock, Handed) {
        let store = InMemorySFUStore()
        let outbox = InMemoryCallStore()
        store.outbox = outbox
        let clock = ManualClock()
        let now = wallClock
        let directory = try SFUDirectory(
            store: store, policy: PlacementPolicy(staleAfter: .seconds(10)),
            resolver: LocationResolver(regions: RegionTable.builtin.points, fallback: RegionTable.builtin.point(of: "fra")!),
            clock: clock, wallClock: { now }, logger: Logger(label: "test", factory: { _ in SwiftLogNoOpLogHandler() }))
        let handed = Handed()
        directory.sendWebhooks(routing) { webhooks in handed.add(webhooks) }
        for (id, region) in [("fra-1", "fra"), ("ams-1", "ams")] {
            _ = try directory.create(SFUDefinition(id: id, url: "wss://\(id).example/ws", region: region, capacity: 100, secret: "secret-secret-\(id)"))
            _ = try directory.heartbeat(SFUID(id)!, load: 0, credential: nil, isAdmin: true)
        }
        return (directory, store, outbox, clock, handed)
    }

    func test_aFailoverWritesSFUDownInItsTransactionAndHandsItToTheWorker() throws {
        let (directory, store, outbox, clock, handed) = try setUp(routing: WebhookRouting(endpoints: [(name: "ops", events: [.sfuDown])]))
        for index in 0..<2 { _ = try directory.place(callID: "c\(index)", participants: [LocationHint(region: "fra")], commit: store.commit) }
        clock.advance(by: .seconds(6))
        _ = try directory.heartbeat(SFUID("ams-1")!, load: 0, credential: nil, isAdmin: true)
        clock.advance(by: .seconds(5))
        XCTAssertEqual(directory.checkHealth().count, 2)

        let pending = try outbox.pendingWebhooks()
        XCTAssertEqual(pending.map(\.message.type), [.sfuDown])
        let message = try XCTUnwrap(pending.first?.message)
        XCTAssertEqual(message.lane, "sfu:fra-1")
        XCTAssertEqual(message.data["sfu_id"], .string("fra-1"))
        XCTAssertEqual(message.data["calls_moved"], .number(2))
        XCTAssertEqual(message.createdAt, wallClock)
        XCTAssertTrue(message.id.hasPrefix("msg_"))
        XCTAssertEqual(pending.first?.delivery.endpoint, "ops")
        XCTAssertEqual(handed.all, pending, "the worker gets what was committed")
    }

    func test_withoutAnEndpointForSFUDownNothingIsWrittenAndAFailedStoreWritesNothing() throws {
        let (directory, store, outbox, clock, handed) = try setUp(routing: WebhookRouting(endpoints: [(name: "billing", events: [.callEnded])]))
        clock.advance(by: .seconds(6))
        _ = try directory.heartbeat(SFUID("ams-1")!, load: 0, credential: nil, isAdmin: true)
        clock.advance(by: .seconds(5))
        _ = directory.checkHealth()
        XCTAssertEqual(store.failoverCount, 1)
        XCTAssertEqual(try outbox.pendingWebhooks(), [])
        XCTAssertEqual(handed.all, [])

        let (failing, failingStore, failingOutbox, failingClock, failingHanded) = try setUp(
            routing: WebhookRouting(endpoints: [(name: "ops", events: [.sfuDown])]))
        failingClock.advance(by: .seconds(6))
        _ = try failing.heartbeat(SFUID("ams-1")!, load: 0, credential: nil, isAdmin: true)
        failingClock.advance(by: .seconds(5))
        failingStore.setFailing(true)
        _ = failing.checkHealth()
        XCTAssertEqual(try failingOutbox.pendingWebhooks(), [])
        XCTAssertEqual(failingHanded.all, [])
        XCTAssertEqual(failing.get(SFUID("fra-1")!)?.state, "active", "nothing of a failed failover is kept")
    }
}

/// What the directory handed to the worker.
private final class Handed: @unchecked Sendable {
    private let lock = NSLock()
    private var webhooks: [PendingWebhook] = []

    func add(_ more: [PendingWebhook]) { lock.withLock { webhooks += more } }
    var all: [PendingWebhook] { lock.withLock { webhooks } }
}
