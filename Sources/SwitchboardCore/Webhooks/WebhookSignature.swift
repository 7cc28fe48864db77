import Crypto
import Foundation

/// Standard Webhooks signing (standardwebhooks.com): secrets are `whsec_` and the base64 of the
/// key bytes; a message is signed with HMAC-SHA256 over `"<webhook-id>.<webhook-timestamp>.<body>"`
/// and sent as `v1,<base64 of the MAC>`, once per key, space-separated, so a receiver that still
/// holds the previous secret during a rotation verifies too. Pure: no clock, no randomness of its
/// own.
public enum WebhookSignature {
    /// The prefix of every secret.
    public static let secretPrefix = "whsec_"
    /// The shortest key accepted: 24 bytes (192 bits).
    public static let minimumKeyBytes = 24
    /// The size of a key ``newSecret(using:)`` makes: 32 bytes (256 bits).
    public static let generatedKeyBytes = 32
    /// The version tag of each signature.
    public static let version = "v1"

    /// The key bytes of `secret` (`whsec_<base64>`). Refuses, with a message naming the problem
    /// (never the secret itself), a missing prefix, text that is not base64, and keys shorter
    /// than ``minimumKeyBytes``.
    public static func key(fromSecret secret: String) throws(SwitchboardError) -> [UInt8] {
        guard secret.hasPrefix(secretPrefix) else {
            throw SwitchboardError(.invalidConfiguration, "a webhook secret must start with \(secretPrefix)")
        }
        let encoded = secret.dropFirst(secretPrefix.count)
        guard !encoded.isEmpty, let key = Data(base64Encoded: String(encoded)) else {
            throw SwitchboardError(.invalidConfiguration, "a webhook secret must be \(secretPrefix) followed by standard base64 (with padding)")
        }
        guard key.count >= minimumKeyBytes else {
            throw SwitchboardError(
                .invalidConfiguration,
                "a webhook secret's key has \(key.count) bytes; at least \(minimumKeyBytes) bytes (\(minimumKeyBytes * 8) bits) are required")
        }
        return Array(key)
    }

    /// `whsec_` and the base64 of `key`: the secret a receiver configures.
    public static func secret(forKey key: [UInt8]) -> String {
        secretPrefix + Data(key).base64EncodedString()
    }

    /// What the store keeps of the configured secret a rotation replaced: the hex SHA-256 of a
    /// label and the secret, so that a start can tell whether the configuration changed since
    /// (``WebhookEndpointState/reconciled(withConfiguredSecret:)``) without storing it.
    public static func digest(ofConfiguredSecret secret: String) -> String {
        SHA256.hash(data: Array("switchboard configured webhook secret\u{0}\(secret)".utf8)).map { byte in
            let hex = String(byte, radix: 16)
            return byte < 16 ? "0" + hex : hex
        }.joined()
    }

    /// A new secret of ``generatedKeyBytes`` key bytes drawn from `generator` (the host passes a
    /// cryptographically secure one, e.g. `SystemRandomNumberGenerator`).
    public static func newSecret(using generator: inout some RandomNumberGenerator) -> String {
        secret(forKey: (0..<generatedKeyBytes).map { _ in UInt8.random(in: .min ... .max, using: &generator) })
    }

    /// The `webhook-timestamp` of `date`: whole seconds since 1970 (rounded down).
    public static func timestamp(_ date: Date) -> Int64 {
        let seconds = date.timeIntervalSince1970.rounded(.down)
        guard seconds.isFinite else { return 0 }
        return Int64(min(max(seconds, -9.0e18), 9.0e18))
    }

    /// The `webhook-signature` header value: `v1,<base64 MAC>` for each of `keys` in order (the
    /// current key first, then the previous one during a rotation), space-separated. Empty when
    /// `keys` is.
    public static func signature(id: String, timestamp: Int64, body: [UInt8], keys: [[UInt8]]) -> String {
        var content = Array("\(id).\(timestamp).".utf8)
        content.append(contentsOf: body)
        return keys.map { key in
            let mac = HMAC<SHA256>.authenticationCode(for: content, using: SymmetricKey(data: key))
            return version + "," + Data(mac).base64EncodedString()
        }.joined(separator: " ")
    }

    /// The three Standard Webhooks headers for the message `id` with `body`, sent at `now`, in
    /// order: `webhook-id`, `webhook-timestamp`, `webhook-signature`.
    public static func headers(id: String, body: [UInt8], keys: [[UInt8]], now: Date) -> [(name: String, value: String)] {
        let timestamp = timestamp(now)
        return [
            ("webhook-id", id), ("webhook-timestamp", String(timestamp)),
            ("webhook-signature", signature(id: id, timestamp: timestamp, body: body, keys: keys)),
        ]
    }
}
