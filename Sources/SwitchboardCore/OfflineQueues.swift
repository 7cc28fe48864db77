import DequeModule

/// Messages waiting for destinations that are not connected, with the PeerJS bounds.
struct OfflineQueues: Sendable {
    struct Entry: Sendable {
        let sender: PeerID
        let frame: [UInt8]
        let queuedAt: MonotonicTime
    }

    private(set) var byDestination: [String: Deque<Entry>] = [:]
    private var countBySender: [PeerID: Int] = [:]
    private var bytesBySender: [PeerID: Int] = [:]
    private(set) var totalCount = 0
    private(set) var totalBytes = 0

    /// Why a message could not be queued.
    enum Refusal: Error { case destinationFull, senderFull, totalFull }

    mutating func enqueue(_ entry: Entry, for destination: String, limits: RelayConfiguration) throws(Refusal) {
        guard (byDestination[destination]?.count ?? 0) < limits.maxQueuedPerDestination else {
            throw .destinationFull
        }
        guard countBySender[entry.sender, default: 0] < limits.maxQueuedPerSender,
            bytesBySender[entry.sender, default: 0] + entry.frame.count <= limits.maxQueuedBytesPerSender
        else { throw .senderFull }
        guard totalCount < limits.maxQueuedTotal, totalBytes + entry.frame.count <= limits.maxQueuedBytes else {
            throw .totalFull
        }
        byDestination[destination, default: []].append(entry)
        countBySender[entry.sender, default: 0] += 1
        bytesBySender[entry.sender, default: 0] += entry.frame.count
        totalCount += 1
        totalBytes += entry.frame.count
    }

    /// Whether anything from `sender` waits for `destination` (at most the per-destination bound
    /// of entries to look at).
    func holds(from sender: PeerID, for destination: String) -> Bool {
        byDestination[destination]?.contains { $0.sender == sender } ?? false
    }

    /// Removes and returns everything queued for `destination`, oldest first.
    mutating func drain(_ destination: String) -> Deque<Entry> {
        guard let entries = byDestination.removeValue(forKey: destination) else { return [] }
        for entry in entries { forget(entry) }
        return entries
    }

    /// Removes entries queued at or before `deadline`; returns them in queue order.
    mutating func removeExpired(queuedAtOrBefore deadline: MonotonicTime) -> [(destination: String, entry: Entry)] {
        var expired: [(String, Entry)] = []
        for destination in Array(byDestination.keys) {
            guard var entries = byDestination[destination] else { continue }
            while let first = entries.first, first.queuedAt <= deadline {
                expired.append((destination, entries.removeFirst()))
            }
            byDestination[destination] = entries.isEmpty ? nil : entries
        }
        for (_, entry) in expired { forget(entry) }
        return expired
    }

    private mutating func forget(_ entry: Entry) {
        totalCount -= 1
        totalBytes -= entry.frame.count
        let remaining = countBySender[entry.sender, default: 1] - 1
        countBySender[entry.sender] = remaining > 0 ? remaining : nil
        let bytes = bytesBySender[entry.sender, default: entry.frame.count] - entry.frame.count
        bytesBySender[entry.sender] = remaining > 0 && bytes > 0 ? bytes : nil
    }
}
