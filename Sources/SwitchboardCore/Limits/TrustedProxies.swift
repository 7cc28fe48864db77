import Foundation

/// Which peers may say who the client is (`server.trusted_proxies`): a connection from one of
/// them is counted, limited and logged under the address its `X-Forwarded-For` names; from
/// anyone else the header is ignored, so a client cannot pick its own address.
public struct TrustedProxies: Sendable, Equatable {
    public let prefixes: [IPPrefix]

    public init(_ prefixes: [IPPrefix] = []) { self.prefixes = prefixes }

    /// Parses addresses or CIDR prefixes; the error names `key` and the first that does not parse.
    public init(parsing texts: [String], key: String) throws(SwitchboardError) {
        var prefixes: [IPPrefix] = []
        for text in texts {
            guard let prefix = IPPrefix(text) else {
                throw SwitchboardError(.invalidConfiguration, "\(key): \"\(text)\" is not an IP address or CIDR prefix")
            }
            prefixes.append(prefix)
        }
        self.prefixes = prefixes
    }

    public var isEmpty: Bool { prefixes.isEmpty }

    /// Whether `address` is a trusted proxy.
    public func contains(_ address: String) -> Bool {
        guard !prefixes.isEmpty, let bytes = IPAddressParser.parse(address) else { return false }
        return prefixes.contains { $0.contains(bytes) }
    }

    /// The client's address: `peer` itself unless `peer` is trusted and `forwardedFor` names
    /// addresses; then the rightmost of those that is not a trusted proxy (each proxy appends the
    /// address it got the request from), or the leftmost when all are. An entry that is not an
    /// IP address ends the walk there (it cannot be trusted further).
    public func clientAddress(peer: String, forwardedFor: String?) -> String {
        guard let forwardedFor, contains(peer) else { return peer }
        var client = peer
        for entry in forwardedFor.split(separator: ",").reversed() {
            let address = entry.trimmingCharacters(in: .whitespaces)
            guard IPAddressParser.parse(address) != nil else { break }
            client = address
            if !contains(address) { break }
        }
        return client
    }
}
