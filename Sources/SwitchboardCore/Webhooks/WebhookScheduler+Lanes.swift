import DequeModule
import Foundation
import HeapModule

/// One endpoint's pending deliveries: lanes, and a heap of the lanes whose head waits for its
/// next attempt.
///
/// Invariants: every delivery held is in `lanes` and in `laneOf`; a lane is in `lanes` while it
/// holds a delivery; `inFlight` counts the lanes with an attempt in flight; each idle, non-empty
/// lane has exactly one current entry in `ready` (its `version`), entries of older versions are
/// stale, and the top of `ready` is never stale (``prune()`` after every change), so
/// ``nextDue(limit:)`` reads it without changing anything.
struct EndpointQueue: Sendable {
    var state: WebhookEndpointState
    private(set) var lanes: [String: Lane] = [:]
    /// Message id → its lane, for every delivery held.
    private var laneOf: [String: String] = [:]
    private var ready = Heap<ReadyLane>()
    private(set) var inFlight = 0
    private var lastVersion: UInt64 = 0

    init(state: WebhookEndpointState) {
        self.state = state
    }

    var pendingCount: Int { laneOf.count }

    /// Every delivery held.
    var held: [PendingWebhook] { lanes.values.flatMap(\.items) }

    func holds(_ messageID: String) -> Bool { laneOf[messageID] != nil }

    /// When the next attempt is due; `nil` while disabled, at the limit, or with nothing waiting.
    func nextDue(limit: Int) -> Date? {
        guard state.disabledAt == nil, inFlight < limit else { return nil }
        return ready.min?.at
    }

    /// Adds `webhook` at its place in its lane; `false` when it is held already.
    mutating func insert(_ webhook: PendingWebhook) -> Bool {
        let id = webhook.delivery.messageID
        let name = webhook.delivery.lane
        guard laneOf[id] == nil else { return false }
        laneOf[id] = name
        let headBefore = lanes[name]?.items.first?.delivery.messageID
        lanes[name, default: Lane()].insert(webhook)
        if lanes[name]?.items.first?.delivery.messageID != headBefore { schedule(name) }
        return true
    }

    /// Marks the heads due at `now` in flight, earliest first, up to `limit` in flight.
    mutating func start(now: Date, limit: Int) -> [PendingWebhook] {
        var started: [PendingWebhook] = []
        while state.disabledAt == nil, inFlight < limit, let top = ready.min, top.at <= now {
            ready.removeMin()
            if let head = lanes[top.lane]?.items.first {
                lanes[top.lane]?.inFlight = head.delivery.messageID
                inFlight += 1
                started.append(head)
            }
            prune()
        }
        return started
    }

    /// Ends the attempt of `messageID` and returns its delivery, `nil` when it is not in flight.
    /// The lane stays without a ``ready`` entry until ``settle(_:)``.
    mutating func endAttempt(_ messageID: String) -> PendingWebhook? {
        guard let name = laneOf[messageID], let lane = lanes[name], lane.inFlight == messageID,
            let index = lane.index(of: messageID)
        else { return nil }
        lanes[name]?.inFlight = nil
        inFlight -= 1
        return lane.items[index]
    }

    /// Stores the delivery's new state after ``endAttempt(_:)``: kept in its lane while
    /// pending, removed otherwise; the lane is scheduled again.
    mutating func settle(_ webhook: PendingWebhook) {
        let id = webhook.delivery.messageID
        guard let name = laneOf[id], let index = lanes[name]?.index(of: id) else { return }
        if webhook.delivery.status == .pending {
            lanes[name]?.items[index] = webhook
        } else {
            lanes[name]?.items.remove(at: index)
            laneOf[id] = nil
        }
        schedule(name)
    }

    /// Gives lane `name` a new ``ready`` entry for its head when idle, dropping it when empty.
    private mutating func schedule(_ name: String) {
        guard let lane = lanes[name] else { return }
        if lane.items.isEmpty && lane.inFlight == nil {
            lanes[name] = nil
        } else {
            lastVersion += 1
            lanes[name]?.version = lastVersion
            if lane.inFlight == nil, let head = lane.items.first {
                ready.insert(ReadyLane(at: head.dueAt, lane: name, version: lastVersion))
            }
        }
        prune()
    }

    /// Drops stale entries from the top of ``ready``.
    private mutating func prune() {
        while let top = ready.min, !isCurrent(top) { ready.removeMin() }
        // Stale entries below the top are dropped as they surface; rebuild when they dominate.
        if ready.count > 2 * lanes.count + 1024 {
            ready = Heap(lanes.compactMap { name, lane in
                guard lane.inFlight == nil, let head = lane.items.first else { return nil }
                return ReadyLane(at: head.dueAt, lane: name, version: lane.version)
            })
        }
    }

    private func isCurrent(_ entry: ReadyLane) -> Bool {
        guard let lane = lanes[entry.lane] else { return false }
        return lane.inFlight == nil && lane.version == entry.version
    }
}

/// One lane's pending deliveries to one endpoint, in `seq` order (then message id). A deque:
/// deliveries leave from the front.
struct Lane: Sendable {
    var items: Deque<PendingWebhook> = []
    /// The message whose attempt is in flight, if any.
    var inFlight: String?
    /// The version of the lane's current ``ReadyLane`` entry.
    var version: UInt64 = 0

    mutating func insert(_ webhook: PendingWebhook) {
        var low = 0
        var high = items.count
        while low < high {
            let middle = (low + high) / 2
            if Self.precedes(items[middle], webhook) { low = middle + 1 } else { high = middle }
        }
        items.insert(webhook, at: low)
    }

    func index(of messageID: String) -> Int? {
        items.firstIndex { $0.delivery.messageID == messageID }
    }

    static func precedes(_ a: PendingWebhook, _ b: PendingWebhook) -> Bool {
        (a.delivery.seq, a.delivery.messageID) < (b.delivery.seq, b.delivery.messageID)
    }
}

/// A delivery held and its message's creation, oldest first.
struct Creation: Comparable, Sendable {
    var at: Date
    var endpoint: String
    var messageID: String

    static func < (a: Self, b: Self) -> Bool {
        (a.at, a.endpoint, a.messageID) < (b.at, b.endpoint, b.messageID)
    }
}

/// A lane whose head waits for its next attempt, in the order heads come due.
struct ReadyLane: Comparable, Sendable {
    var at: Date
    var lane: String
    var version: UInt64

    static func < (a: Self, b: Self) -> Bool {
        (a.at, a.lane, a.version) < (b.at, b.lane, b.version)
    }
}

extension PendingWebhook {
    /// When the next attempt may start: the first at the message's creation.
    var dueAt: Date { delivery.nextAttemptAt ?? delivery.createdAt }
}
