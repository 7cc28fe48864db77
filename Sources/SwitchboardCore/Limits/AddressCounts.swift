/// Connections per remote address, all of them (WebSocket, HTTP, or nothing yet), and of those
/// the ones still pending (no complete request or upgrade). The transport asks ``admit(_:)`` at
/// accept, before any byte is read, and closes the socket at once when it says no.
public struct AddressCounts: Sendable {
    /// Why a connection was refused at accept.
    public enum Refusal: Sendable, Equatable {
        case tooManyConnections
        case tooManyPending
    }

    public let maxConnections: Int
    public let maxPending: Int
    private var open: [String: Int] = [:]
    private var pending: [String: Int] = [:]

    public init(maxConnections: Int, maxPending: Int) {
        self.maxConnections = maxConnections
        self.maxPending = maxPending
    }

    /// Counts a new connection from `address` as open and pending, or refuses it.
    public mutating func admit(_ address: String) -> Refusal? {
        if open[address, default: 0] >= maxConnections { return .tooManyConnections }
        if pending[address, default: 0] >= maxPending { return .tooManyPending }
        open[address, default: 0] += 1
        pending[address, default: 0] += 1
        return nil
    }

    /// A pending connection from `address` finished its request or upgrade.
    public mutating func settled(_ address: String) {
        decrement(&pending, address)
    }

    /// A connection from `address` closed; `pending` if it never settled.
    public mutating func released(_ address: String, pending wasPending: Bool) {
        if wasPending { decrement(&pending, address) }
        decrement(&open, address)
    }

    /// Open connections from `address`.
    public func connections(from address: String) -> Int { open[address, default: 0] }

    /// Pending connections from `address`.
    public func pendingConnections(from address: String) -> Int { pending[address, default: 0] }

    /// Addresses with at least one open connection (entries leave when they reach zero).
    public var addressCount: Int { open.count }

    private func decrement(_ table: inout [String: Int], _ address: String) {
        guard let value = table[address] else { return }
        if value <= 1 { table[address] = nil } else { table[address] = value - 1 }
    }
}
