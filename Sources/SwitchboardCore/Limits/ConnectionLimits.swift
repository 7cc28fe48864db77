/// Caps on sockets and the rate they may open, shared by the PeerJS and call-protocol paths.
public struct ConnectionLimits: Sendable, Equatable {
    /// Most open sockets in total.
    public var total: Int
    /// Most open sockets from one remote address.
    public var perAddress: Int
    /// New sockets one remote address may open per second, and in a burst.
    public var connectRate: Double
    public var connectBurst: Double

    public init(total: Int = 50_000, perAddress: Int = 1000, connectRate: Double = 100, connectBurst: Double = 500) {
        self.total = total
        self.perAddress = perAddress
        self.connectRate = connectRate
        self.connectBurst = connectBurst
    }
}

/// Admits or refuses new sockets against ``ConnectionLimits``: pure bookkeeping of open sockets
/// per address and a connect token bucket per address.
public struct ConnectionLimiter: Sendable {
    /// Why a socket was refused (metric label and close reason).
    public enum Refusal: String, Sendable, Equatable, CaseIterable {
        case total = "connections_total"
        case perAddress = "connections_per_ip"
        case connectRate = "connect_rate"
    }

    public let limits: ConnectionLimits
    private var open: [ConnectionID: String] = [:]
    private var perAddress: [String: Int] = [:]
    private var buckets: [String: TokenBucket] = [:]

    public init(limits: ConnectionLimits) {
        self.limits = limits
    }

    /// Open sockets counted.
    public var openCount: Int { open.count }

    /// Open sockets from `address`.
    public func count(from address: String) -> Int { perAddress[address] ?? 0 }

    /// Counts `socket` as open, or says why it must be closed (then it is not counted).
    public mutating func admit(_ socket: ConnectionID, from address: String, now: MonotonicTime) -> Refusal? {
        var bucket = buckets[address] ?? TokenBucket(rate: limits.connectRate, burst: limits.connectBurst, now: now)
        defer { buckets[address] = bucket }
        guard bucket.take(now: now) else { return .connectRate }
        guard open.count < limits.total else { return .total }
        guard perAddress[address, default: 0] < limits.perAddress else { return .perAddress }
        open[socket] = address
        perAddress[address, default: 0] += 1
        return nil
    }

    /// The socket closed.
    public mutating func release(_ socket: ConnectionID) {
        guard let address = open.removeValue(forKey: socket) else { return }
        perAddress[address, default: 1] -= 1
        if perAddress[address] == 0 { perAddress[address] = nil }
        open.releaseSpareCapacity()
        perAddress.releaseSpareCapacity()
    }

    /// Forgets buckets that have refilled for addresses with no open socket (bounded memory).
    public mutating func prune(now: MonotonicTime) {
        let refill = limits.connectRate > 0 ? limits.connectBurst / limits.connectRate : 0
        buckets = buckets.filter { address, bucket in
            perAddress[address] != nil || now.since(bucket.updatedAt).seconds < refill
        }
    }
}
