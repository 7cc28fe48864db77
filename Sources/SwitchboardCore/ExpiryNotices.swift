/// Which senders have been told, with an `EXPIRE`, that a destination is unreachable: one
/// EXPIRE per (sender, destination) for one attempt (an OFFER and the CANDIDATEs trickled after
/// it expire in different sweeps; the PeerJS client turns each EXPIRE into a `peer-unavailable`
/// error). A pair is told again for a new attempt (a message queued when nothing of the sender's
/// waits for the destination), once the destination has come back, or when the sender's id is
/// held by another socket than the one told.
struct ExpiryNotices: Sendable {
    /// Per destination: each sender told, and the socket that held its id then.
    private var told: [String: [PeerID: ConnectionID]] = [:]
    private(set) var count = 0

    /// Pairs kept before the stale ones are dropped (bounded memory: a sender can make the
    /// relay expire messages to any number of absent ids over time).
    static let capacity = 65_536

    /// Whether to tell `sender` (on `socket`) that `destination` is unreachable; records it.
    /// `isCurrent(id, socket)` says whether `socket` still holds `id`.
    mutating func shouldTell(
        _ sender: PeerID, on socket: ConnectionID, about destination: String, isCurrent: (PeerID, ConnectionID) -> Bool
    ) -> Bool {
        if told[destination]?[sender] == socket { return false }
        if count >= Self.capacity { prune(keeping: isCurrent) }
        if told[destination, default: [:]].updateValue(socket, forKey: sender) == nil { count += 1 }
        return true
    }

    /// `sender` starts a new attempt at `destination`: its next expiry is told again.
    mutating func forget(_ sender: PeerID, about destination: String) {
        guard told[destination]?.removeValue(forKey: sender) != nil else { return }
        count -= 1
        if told[destination]?.isEmpty == true { told[destination] = nil }
    }

    /// `destination` registered: whoever writes to it later and finds it gone again is told anew.
    mutating func arrived(_ destination: String) {
        guard let senders = told.removeValue(forKey: destination) else { return }
        count -= senders.count
    }

    /// Drops pairs whose sender's socket no longer holds the id; if that frees too little, all.
    private mutating func prune(keeping isCurrent: (PeerID, ConnectionID) -> Bool) {
        told = told.compactMapValues { senders in
            let kept = senders.filter { isCurrent($0.key, $0.value) }
            return kept.isEmpty ? nil : kept
        }
        count = told.values.reduce(0) { $0 + $1.count }
        if count >= Self.capacity / 2 {
            told = [:]
            count = 0
        }
    }
}
