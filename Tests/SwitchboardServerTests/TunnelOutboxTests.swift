import Foundation
import SwitchboardCore
import Synchronization
import XCTest

@testable import SwitchboardServer

/// ``TunnelOutbox``: batches reach the bus in order; those queued during a send go together in
/// the next message; a message the bus refused is reported; ``TunnelOutbox/finish()`` sends
/// what is queued first.
final class TunnelOutboxTests: XCTestCase {
    private final class Bus: Sendable {
        let sent = Mutex<[(kind: String, batch: TunnelBatch)]>([])
        let gate = DispatchSemaphore(value: 0)
        let entered = DispatchSemaphore(value: 0)
        let refuse = Mutex(false)
        let failures = Mutex(0)

        func send(_ kind: String, _ body: String) async -> Bool {
            entered.signal()
            await withCheckedContinuation { continuation in
                DispatchQueue.global().async {
                    self.gate.wait()
                    continuation.resume()
                }
            }
            if refuse.withLock({ $0 }) { return false }
            let batch = try! TunnelBatch.decode(body)
            sent.withLock { $0.append((kind, batch)) }
            return true
        }
    }

    private func id(_ serial: UInt64) -> ConnectionID { ConnectionID(thread: 0, serial: serial) }
    private func frame(_ n: Int) -> [UInt8] { Array("{\"n\":\(n)}".utf8) }

    func test_batchesQueuedDuringASendGoTogetherInOrder() async {
        let bus = Bus()
        let outbox = TunnelOutbox(destination: "n1", send: { await bus.send($0, $1) }, failed: { _ in bus.failures.withLock { $0 += 1 } })
        outbox.enqueue(kind: TunnelBatch.commandsKind, TunnelBatch(generation: 3, commands: [.send(id(1), frame(1))]))
        bus.entered.wait()  // the first send is under way, held at the gate
        outbox.enqueue(kind: TunnelBatch.commandsKind, TunnelBatch(generation: 3, commands: [.send(id(1), frame(2))]))
        outbox.enqueue(kind: TunnelBatch.commandsKind, TunnelBatch(generation: 3, commands: [.send(id(2), frame(3))]))
        // Another generation is not merged with the one before it.
        outbox.enqueue(kind: TunnelBatch.commandsKind, TunnelBatch(generation: 4, commands: [.close(id(2), .serviceRestart, reason: "x")]))
        for _ in 0..<3 { bus.gate.signal() }
        await outbox.finish()
        let sent = bus.sent.withLock { $0 }
        XCTAssertEqual(sent.map(\.batch), [
            TunnelBatch(generation: 3, commands: [.send(id(1), frame(1))]),
            TunnelBatch(generation: 3, commands: [.send(id(1), frame(2)), .send(id(2), frame(3))]),
            TunnelBatch(generation: 4, commands: [.close(id(2), .serviceRestart, reason: "x")]),
        ])
        XCTAssertEqual(sent.map(\.kind), Array(repeating: TunnelBatch.commandsKind, count: 3))
        XCTAssertEqual(bus.failures.withLock { $0 }, 0)
    }

    func test_mergingStopsShortOfTheInlineLimit() {
        let big = [UInt8](repeating: UInt8(ascii: "a"), count: TunnelOutbox.mergeLimit / 2)
        let items = (1...3).map { TunnelOutbox.Item(kind: TunnelBatch.eventsKind, batch: TunnelBatch(generation: 1, events: [.message(id(UInt64($0)), big, isBinary: false)])) }
        let merged = TunnelOutbox.merged(items)
        // Two halves and their fields are over the limit: each goes alone.
        XCTAssertEqual(merged.map { $0.batch.events.count }, [1, 1, 1])
        let small = (1...5).map { TunnelOutbox.Item(kind: TunnelBatch.eventsKind, batch: TunnelBatch(generation: 1, events: [.closed(id(UInt64($0)))])) }
        XCTAssertEqual(TunnelOutbox.merged(small).map { $0.batch.events }, [(1...5).map { TransportEvent.closed(id(UInt64($0))) }])
    }

    func test_probesTravelAlone() {
        let items = [
            TunnelOutbox.Item(kind: TunnelBatch.eventsKind, batch: TunnelBatch(generation: 1, events: [.closed(id(1))])),
            TunnelOutbox.Item(kind: TunnelBatch.eventsKind, batch: TunnelBatch(generation: 1, ping: 5)),
            TunnelOutbox.Item(kind: TunnelBatch.eventsKind, batch: TunnelBatch(generation: 1, events: [.closed(id(2))])),
            TunnelOutbox.Item(kind: TunnelBatch.eventsKind, batch: TunnelBatch(generation: 1, events: [.closed(id(3))])),
        ]
        XCTAssertEqual(
            TunnelOutbox.merged(items).map(\.batch),
            [TunnelBatch(generation: 1, events: [.closed(id(1))]), TunnelBatch(generation: 1, ping: 5),
             TunnelBatch(generation: 1, events: [.closed(id(2)), .closed(id(3))])])
    }

    /// Handled counts add up when batches merge; a relaying node's batches that ask for reports
    /// never merge with ones that do not (the leader would report the earlier ones' messages,
    /// already counted handled when sent).
    func test_mergedBatchesAddUpHandledCountsAndKeepReportsApart() {
        let items = [
            TunnelOutbox.Item(kind: TunnelBatch.commandsKind, batch: TunnelBatch(generation: 1, reports: true, handled: [id(1): 2])),
            TunnelOutbox.Item(kind: TunnelBatch.commandsKind, batch: TunnelBatch(generation: 1, commands: [.send(id(1), frame(1))], reports: true, handled: [id(1): 1, id(2): 4])),
            TunnelOutbox.Item(kind: TunnelBatch.eventsKind, batch: TunnelBatch(generation: 1, events: [.message(id(1), frame(2), isBinary: false)])),
            TunnelOutbox.Item(kind: TunnelBatch.eventsKind, batch: TunnelBatch(generation: 1, events: [.message(id(1), frame(3), isBinary: false)], reports: true)),
        ]
        XCTAssertEqual(
            TunnelOutbox.merged(items).map(\.batch),
            [
                TunnelBatch(generation: 1, commands: [.send(id(1), frame(1))], reports: true, handled: [id(1): 3, id(2): 4]),
                TunnelBatch(generation: 1, events: [.message(id(1), frame(2), isBinary: false)]),
                TunnelBatch(generation: 1, events: [.message(id(1), frame(3), isBinary: false)], reports: true),
            ])
    }

    func test_aRefusedSendIsReportedAndTheNextOneStillGoes() async {
        let bus = Bus()
        bus.refuse.withLock { $0 = true }
        let failed = expectation(description: "failure reported")
        let outbox = TunnelOutbox(destination: "n1", send: { await bus.send($0, $1) }, failed: { _ in failed.fulfill() })
        outbox.enqueue(kind: TunnelBatch.eventsKind, TunnelBatch(generation: 1, events: [.closed(id(1))]))
        bus.gate.signal()
        await fulfillment(of: [failed], timeout: 10)
        bus.refuse.withLock { $0 = false }
        outbox.enqueue(kind: TunnelBatch.eventsKind, TunnelBatch(generation: 1, events: [.closed(id(2))]))
        bus.gate.signal()
        await outbox.finish()
        XCTAssertEqual(bus.sent.withLock { $0.map(\.batch) }, [TunnelBatch(generation: 1, events: [.closed(id(2))])])
        // Nothing is taken after finish; its completion runs at once.
        let ran = Mutex(false)
        outbox.enqueue(kind: TunnelBatch.eventsKind, TunnelBatch(generation: 1, events: [.closed(id(3))]), onSent: { ran.withLock { $0 = true } })
        XCTAssertEqual(bus.sent.withLock { $0.count }, 1)
        XCTAssertTrue(ran.withLock { $0 })
    }

    func test_eachItemsCompletionRunsOnlyOnceItsMessageWasSentOrRefused() async {
        let bus = Bus()
        let done = Mutex<[Int]>([])
        let outbox = TunnelOutbox(destination: "n1", send: { await bus.send($0, $1) }, failed: { _ in })
        outbox.enqueue(kind: TunnelBatch.eventsKind, TunnelBatch(generation: 1, events: [.closed(id(1))]), onSent: { done.withLock { $0.append(1) } })
        bus.entered.wait()
        XCTAssertEqual(done.withLock { $0 }, [], "held while its send is under way")
        outbox.enqueue(kind: TunnelBatch.eventsKind, TunnelBatch(generation: 1, events: [.closed(id(2))]), onSent: { done.withLock { $0.append(2) } })
        outbox.enqueue(kind: TunnelBatch.eventsKind, TunnelBatch(generation: 1, events: [.closed(id(3))]), onSent: { done.withLock { $0.append(3) } })
        bus.gate.signal()
        bus.entered.wait()  // the merged second message is under way
        XCTAssertEqual(done.withLock { $0 }, [1])
        bus.refuse.withLock { $0 = true }
        bus.gate.signal()
        await outbox.finish()
        XCTAssertEqual(done.withLock { $0 }, [1, 2, 3], "a refused message's items complete too")
    }
}
