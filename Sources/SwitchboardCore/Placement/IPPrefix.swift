/// One CIDR prefix (`10.0.0.0/8`, `2001:db8::/32`, or a single address).
public struct IPPrefix: Sendable, Equatable {
    public let network: [UInt8]
    public let length: Int

    /// Parses `address/length` or a bare address (a prefix of the address's full length).
    public init?(_ text: String) {
        let parts = text.split(separator: "/", omittingEmptySubsequences: false)
        guard parts.count <= 2, let bytes = IPAddressParser.parse(String(parts[0])) else { return nil }
        if parts.count == 2 {
            guard let length = Int(parts[1]), (0...(bytes.count * 8)).contains(length) else { return nil }
            self.length = length
        } else {
            self.length = bytes.count * 8
        }
        self.network = bytes
    }

    /// Whether `address` (parsed bytes) lies in this prefix; IPv4 never matches IPv6.
    public func contains(_ address: [UInt8]) -> Bool {
        guard address.count == network.count else { return false }
        var remaining = length
        for (index, byte) in network.enumerated() where remaining > 0 {
            let bits = min(8, remaining)
            let mask = UInt8(truncatingIfNeeded: 0xFF << (8 - bits))
            if address[index] & mask != byte & mask { return false }
            remaining -= bits
        }
        return true
    }
}
