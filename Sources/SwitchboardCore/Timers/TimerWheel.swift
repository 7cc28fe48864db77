/// A hashed timing wheel (Varghese and Lauck): scheduling is O(1), and each tick visits only the
/// entries that hash to that tick's slot, so the cost per timer does not depend on how many
/// timers there are.
///
/// The wheel keeps no per-key index and never cancels: a key rescheduled or gone leaves a stale
/// entry behind, and the owner drops it when it comes due (its deadline no longer matches the
/// key's current one). Each key therefore costs one entry per reschedule still outstanding.
public struct TimerWheel<Key: Hashable & Sendable>: Sendable {
    /// A key and the deadline it was scheduled for.
    public struct Entry: Sendable, Equatable {
        public let key: Key
        public let deadline: MonotonicTime
    }

    /// The wheel's resolution: deadlines fire up to one tick late, never early.
    public let tick: Duration
    private let tickNanoseconds: Int64
    private var slots: [[Entry]]
    /// The next tick number to visit.
    private var cursor: Int64
    /// Entries scheduled and not yet fired (stale ones included).
    public private(set) var count = 0

    /// A wheel of `slotCount` slots of `tick` each, whose first tick is the one holding `start`.
    public init(tick: Duration, slotCount: Int = 512, start: MonotonicTime) {
        precondition(tick > .zero && slotCount > 0, "a wheel needs a positive tick and at least one slot")
        self.tick = tick
        self.tickNanoseconds = max(1, tick.nanoseconds)
        self.slots = Array(repeating: [], count: slotCount)
        self.cursor = start.nanoseconds / max(1, tick.nanoseconds)
    }

    /// Schedules `key` to come due at `deadline` (at once, on the next ``advance(to:)``, when
    /// the deadline has passed).
    public mutating func schedule(_ key: Key, at deadline: MonotonicTime) {
        // The first tick at or after the deadline: visiting it finds the entry due.
        let (quotient, remainder) = deadline.nanoseconds.quotientAndRemainder(dividingBy: tickNanoseconds)
        let tickNumber = max(remainder > 0 ? quotient + 1 : quotient, cursor)
        slots[slotIndex(tickNumber)].append(Entry(key: key, deadline: deadline))
        count += 1
    }

    /// Visits every tick up to `now` and returns the entries due, earliest tick first. A gap
    /// longer than the wheel visits each slot once.
    public mutating func advance(to now: MonotonicTime) -> [Entry] {
        let target = now.nanoseconds / tickNanoseconds
        guard target >= cursor else { return [] }
        var due: [Entry] = []
        let last = min(target, cursor + Int64(slots.count) - 1)
        for tickNumber in cursor...last {
            let index = slotIndex(tickNumber)
            guard !slots[index].isEmpty else { continue }
            var kept: [Entry] = []
            for entry in slots[index] {
                if entry.deadline <= now { due.append(entry) } else { kept.append(entry) }
            }
            count -= slots[index].count - kept.count
            slots[index] = kept
        }
        cursor = target + 1
        return due
    }

    private func slotIndex(_ tickNumber: Int64) -> Int {
        Int(tickNumber % Int64(slots.count))
    }
}
