import Synchronization

/// Bytes of WebSocket messages that have started arriving and are not complete yet, over every
/// socket of every service thread. `transport.max_message_bytes` bounds one message; this bounds
/// them all together, so many sockets each holding most of a large message cannot grow the heap
/// without bound. A socket whose next fragment would go over is closed with 1013.
final class PartialMessageBudget: Sendable {
    let limit: Int
    private let used = Mutex(0)

    init(limit: Int) {
        self.limit = limit
    }

    /// Takes `bytes` from the budget; `false` (and nothing taken) when they do not fit.
    func reserve(_ bytes: Int) -> Bool {
        used.withLock { used in
            guard used + bytes <= limit else { return false }
            used += bytes
            return true
        }
    }

    /// Gives back bytes taken by ``reserve(_:)``.
    func release(_ bytes: Int) {
        guard bytes > 0 else { return }
        used.withLock { $0 -= bytes }
    }

    /// Bytes held now.
    var inUse: Int { used.withLock { $0 } }
}
