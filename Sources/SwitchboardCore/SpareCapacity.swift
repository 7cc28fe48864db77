/// Swift's hash tables keep the capacity of their largest size: after a crowd of sockets or a
/// burst of calls has gone, the storage stays. Tables that follow the load give it back once
/// they are a quarter full, keeping room for twice what they hold, so the cost stays amortized
/// O(1) per removal.
extension Dictionary {
    /// Rebuilds the table smaller when at most a quarter of a large capacity is used.
    @inlinable
    public mutating func releaseSpareCapacity(threshold: Int = 1024) {
        guard capacity > threshold, count * 4 < capacity else { return }
        var smaller = Self(minimumCapacity: count * 2)
        for (key, value) in self { smaller[key] = value }
        self = smaller
    }
}

extension Set {
    /// Rebuilds the set smaller when at most a quarter of a large capacity is used.
    @inlinable
    public mutating func releaseSpareCapacity(threshold: Int = 1024) {
        guard capacity > threshold, count * 4 < capacity else { return }
        var smaller = Self(minimumCapacity: count * 2)
        for element in self { smaller.insert(element) }
        self = smaller
    }
}
