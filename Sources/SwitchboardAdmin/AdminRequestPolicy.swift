import SwitchboardCore

/// What a request to the admin API must look like before its token is even read, so that a web
/// page cannot drive the API: DNS rebinding gives the attacker's page the admin address under the
/// attacker's *name* (its `Host`), and a cross-site form post carries a foreign `Origin` and a
/// form content type.
///
/// - `Host`, when present, must be an IP literal, `localhost`, or a name in `admin.allowed_hosts`.
/// - `Origin`, when present, must name such a host too (`null` is refused).
/// - A body, or any `Content-Type`, must be `application/json`.
public struct AdminRequestPolicy: Sendable, Equatable {
    /// Host names accepted besides IP literals and `localhost` (lower case, without port).
    public var allowedHosts: Set<String>

    public init(allowedHosts: some Sequence<String> = []) {
        self.allowedHosts = Set(allowedHosts.map { $0.lowercased() })
    }

    /// The error a request is refused with, or `nil` when it may proceed.
    public func refusal(for request: HTTPRequest) -> SwitchboardError? {
        // No Host at all is HTTP/1.0 from a tool; browsers always send one.
        if let host = request.headers["host"] {
            guard let name = Self.hostName(ofAuthority: host), accepts(name) else {
                return SwitchboardError(
                    .forbidden, "Host \(LogText.escape(host, limit: 80)) is not an address of this admin API (add the name to admin.allowed_hosts)")
            }
        }
        if let origin = request.headers["origin"] {
            guard let originHost = Self.hostName(ofOrigin: origin), accepts(originHost) else {
                return SwitchboardError(.forbidden, "requests from the web origin \(LogText.escape(origin, limit: 80)) are refused")
            }
        }
        let contentType = request.headers["content-type"]
        if contentType != nil || !request.body.isEmpty {
            let mediaType = (contentType ?? "").split(separator: ";", maxSplits: 1).first.map {
                $0.trimmingCharacters(in: .whitespaces).lowercased()
            }
            guard mediaType == "application/json" else {
                return SwitchboardError(.unsupportedMediaType, "request bodies must be application/json (Content-Type)")
            }
        }
        return nil
    }

    private func accepts(_ name: String) -> Bool {
        name == "localhost" || Self.isIPLiteral(name) || allowedHosts.contains(name)
    }

    /// The host of `host[:port]` or `[v6][:port]`, lower-cased; `nil` when malformed.
    static func hostName(ofAuthority authority: String) -> String? {
        let text = authority.trimmingCharacters(in: .whitespaces).lowercased()
        guard !text.isEmpty else { return nil }
        if text.hasPrefix("[") {
            guard let close = text.firstIndex(of: "]") else { return nil }
            let rest = text[text.index(after: close)...]
            guard rest.isEmpty || (rest.hasPrefix(":") && rest.dropFirst().allSatisfy(\.isNumber)) else { return nil }
            return String(text[text.index(after: text.startIndex)..<close])
        }
        let parts = text.split(separator: ":", omittingEmptySubsequences: false)
        guard parts.count <= 2, !parts[0].isEmpty else { return nil }
        if parts.count == 2, parts[1].isEmpty || !parts[1].allSatisfy(\.isNumber) { return nil }
        return String(parts[0])
    }

    /// The host of an `Origin` (`scheme://authority`), or `nil` (also for `null`).
    static func hostName(ofOrigin origin: String) -> String? {
        guard let range = origin.range(of: "://") else { return nil }
        return hostName(ofAuthority: String(origin[range.upperBound...]))
    }

    /// Whether `name` is a dotted-quad IPv4 address or an IPv6 address (no names).
    public static func isIPLiteral(_ name: String) -> Bool {
        isIPv4(name) || isIPv6(name)
    }

    public static func isIPv4(_ name: String) -> Bool {
        let parts = name.split(separator: ".", omittingEmptySubsequences: false)
        return parts.count == 4
            && parts.allSatisfy { $0.count >= 1 && $0.count <= 3 && $0.allSatisfy(\.isASCII) && $0.allSatisfy(\.isNumber) && Int($0)! <= 255 }
    }

    static func isIPv6(_ name: String) -> Bool {
        let colons = name.filter { $0 == ":" }.count
        return colons >= 2 && name.allSatisfy { $0.isHexDigit || $0 == ":" || $0 == "." }
    }

    /// Whether `host` is a loopback address literal (127.0.0.0/8 or ::1); names never are.
    public static func isLoopbackAddress(_ host: String) -> Bool {
        if isIPv4(host) { return host.split(separator: ".").first == "127" }
        let lowered = host.lowercased()
        return lowered == "::1" || lowered == "0:0:0:0:0:0:0:1"
    }
}
