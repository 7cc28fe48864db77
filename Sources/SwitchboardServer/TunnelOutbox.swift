import Foundation
import SwitchboardCore
import SwitchboardPostgres
import Synchronization

/// The tunnel batches on their way to one node, sent on the bus in order by one task. Batches
/// queued while a send is under way go together in the next message (merged when they are of
/// one kind and generation), so a busy node sends fewer, larger messages instead of queueing
/// one round trip per transport batch. Each item may carry what to do once its message was
/// sent (or refused): a relaying node reports its sockets' messages handled only then, so a
/// socket whose messages the bus cannot take as fast as they come is paused by its transport.
final class TunnelOutbox: Sendable {
    struct Item: Sendable {
        var kind: String
        var batch: TunnelBatch
        /// A message of another kind (a ``CallForwardBatch``), already written: sent as it is,
        /// in its place in the order, never merged.
        var body: String?
        var onSent: [@Sendable () -> Void] = []
    }

    private struct State {
        var items: [Item] = []
        var finished = false
    }

    /// The queue, shared with the sending task.
    private final class Queue: Sendable {
        let state = Mutex(State())
    }

    let destination: String
    private let queue = Queue()
    private let wake: AsyncStream<Void>.Continuation
    private let task: Task<Void, Never>

    /// Starts the sending task: `send` is called with each message body, in order; a `false`
    /// return (not sent) is reported to `failed`, with the message's kind, once per lost message.
    init(
        destination: String, send: @escaping @Sendable (_ kind: String, _ body: String) async -> Bool,
        failed: @escaping @Sendable (_ kind: String) -> Void
    ) {
        self.destination = destination
        let (wakes, wake) = AsyncStream<Void>.makeStream(bufferingPolicy: .bufferingNewest(1))
        self.wake = wake
        let queue = self.queue
        task = Task {
            for await _ in wakes {
                while true {
                    let items = queue.state.withLock { state -> [Item] in
                        defer { state.items = [] }
                        return state.items
                    }
                    if items.isEmpty { break }
                    for item in Self.merged(items) {
                        if await !send(item.kind, item.body ?? item.batch.encoded()) { failed(item.kind) }
                        for done in item.onSent { done() }
                    }
                }
                if queue.state.withLock({ $0.finished && $0.items.isEmpty }) { break }
            }
        }
    }

    /// Queues `batch` after those queued before; `onSent` runs once its message was sent or
    /// refused (at once when the outbox has finished).
    func enqueue(kind: String, _ batch: TunnelBatch, body: String? = nil, onSent: (@Sendable () -> Void)? = nil) {
        let accepted = queue.state.withLock { state -> Bool in
            guard !state.finished else { return false }
            state.items.append(Item(kind: kind, batch: batch, body: body, onSent: onSent.map { [$0] } ?? []))
            return true
        }
        if accepted {
            wake.yield()
        } else {
            onSent?()
        }
    }

    /// Sends what is queued, then ends the task; returns once it ended.
    func finish() async {
        queue.state.withLock { $0.finished = true }
        wake.yield()
        wake.finish()
        await task.value
    }

    /// About how many bytes a merged batch may reach: merging stops short of the bus's inline
    /// limit, since a message over it goes by reference, which costs several round trips.
    static let mergeLimit = PostgresBus.inlineLimit * 3 / 4

    /// Consecutive items of one kind, generation and ``TunnelBatch/reports`` as one (their events
    /// and commands in order, their handled counts added up),
    /// while the merged batch stays under ``mergeLimit`` (roughly: frames as their bytes, plus
    /// the fields around each).
    static func merged(_ items: [Item]) -> [Item] {
        var out: [Item] = []
        var size = 0
        for item in items {
            let weight = Self.weight(item.batch)
            if let last = out.last, last.body == nil, item.body == nil, last.kind == item.kind, last.batch.generation == item.batch.generation,
                size + weight <= mergeLimit,
                !last.batch.probes, !item.batch.probes,
                last.batch.reports == item.batch.reports
            {
                out[out.count - 1].batch.events += item.batch.events
                out[out.count - 1].batch.commands += item.batch.commands
                out[out.count - 1].batch.handled.merge(item.batch.handled, uniquingKeysWith: +)
                out[out.count - 1].onSent += item.onSent
                size += weight
            } else {
                out.append(item)
                size = weight
            }
        }
        return out
    }

    private static func weight(_ batch: TunnelBatch) -> Int {
        let events = batch.events.reduce(0) { total, event in
            switch event {
            case .message(_, let bytes, _): total + bytes.count + 48
            case .request(_, let request): total + request.body.count + request.path.utf8.count + 256
            case .opened(_, let upgrade): total + upgrade.query.reduce(0) { $0 + $1.key.utf8.count + $1.value.utf8.count } + 256
            case .closed: total + 32
            }
        }
        return batch.commands.reduce(events + batch.handled.count * 24) { total, command in
            switch command {
            case .send(_, let bytes), .sendBinary(_, let bytes): total + bytes.count + 48
            case .respond(_, let response): total + response.body.count + 256
            case .close(_, _, let reason): total + reason.utf8.count + 48
            }
        }
    }
}

extension TunnelBatch {
    /// Whether the batch carries a ping or a pong: such a batch travels alone (never merged), so
    /// its round trip is that of one message.
    var probes: Bool { ping != nil || pong != nil }
}
