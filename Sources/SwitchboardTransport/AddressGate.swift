import Foundation
import SwitchboardCore

/// Per-address connection counts for every listener, shared by the service threads (a socket is
/// counted by the thread that accepted it, against the totals of all threads). Each listener
/// role counts separately, so a flood of the client port never locks operators out of the
/// admin port.
final class AddressGate: @unchecked Sendable {
    private let lock = NSLock()
    private var counts: [ListenerRole: AddressCounts] = [:]
    private let maxConnections: Int
    private let maxPending: Int

    init(maxConnections: Int, maxPending: Int) {
        self.maxConnections = maxConnections
        self.maxPending = maxPending
    }

    func admit(_ role: ListenerRole, _ address: String) -> AddressCounts.Refusal? {
        lock.withLock {
            counts[role, default: AddressCounts(maxConnections: maxConnections, maxPending: maxPending)].admit(address)
        }
    }

    func settled(_ role: ListenerRole, _ address: String) {
        lock.withLock { counts[role]?.settled(address) }
    }

    func released(_ role: ListenerRole, _ address: String, pending: Bool) {
        lock.withLock { counts[role]?.released(address, pending: pending) }
    }
}
