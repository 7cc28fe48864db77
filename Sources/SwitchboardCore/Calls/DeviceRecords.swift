import Crypto
import Foundation

/// The push services a device token belongs to.
public enum DeviceProvider: String, Sendable, Equatable, Hashable, CaseIterable, Codable {
    case apns
    case apnsVoIP = "apns_voip"
    case fcm
    case webpush
}

/// A push device of a user: what the operator's push service needs to wake the user's app.
public struct DeviceRecord: Sendable, Equatable {
    public var userID: UserID
    public var provider: DeviceProvider
    /// The provider's token (a Web Push subscription as its JSON text).
    public var token: String
    public var createdAt: Date

    public init(userID: UserID, provider: DeviceProvider, token: String, createdAt: Date) {
        self.userID = userID
        self.provider = provider
        self.token = token
        self.createdAt = createdAt
    }

    /// What identifies a device: the provider's token is unique within the provider.
    public var key: DeviceKey { DeviceKey(provider: provider, token: token) }

    /// As the admin API, `device.register` and the `call.ring` webhook show it.
    public var json: JSONValue {
        .object([
            "device_id": .string(key.id), "user_id": .string(userID.rawValue), "provider": .string(provider.rawValue), "token": .string(token),
            "created_at": .time(createdAt),
        ])
    }

    /// Longest token accepted, in bytes (a Web Push subscription is about 500; APNs 64, FCM ~160).
    public static let maximumTokenBytes = 4096

    /// The one check of a token, shared by the call protocol and the admin API.
    public static func validate(token: String) throws(SwitchboardError) {
        guard !token.isEmpty else { throw SwitchboardError(.invalidRequest, "data.token must be a non-empty string") }
        guard token.utf8.count <= maximumTokenBytes else {
            throw SwitchboardError(.payloadTooLarge, "data.token is longer than \(maximumTokenBytes) bytes")
        }
        guard !token.utf8.contains(where: { $0 < 0x20 || $0 == 0x7F }) else {
            throw SwitchboardError(.invalidRequest, "data.token must not contain control characters")
        }
    }
}

/// A device's identity: provider and token.
public struct DeviceKey: Sendable, Equatable, Hashable {
    public var provider: DeviceProvider
    public var token: String

    public init(provider: DeviceProvider, token: String) {
        self.provider = provider
        self.token = token
    }

    /// A short stable name for URLs (tokens may hold `/` and run to kilobytes): the first 12
    /// bytes of SHA-256 over provider, NUL, token, in hex.
    public var id: String {
        let digest = SHA256.hash(data: Array(provider.rawValue.utf8) + [0] + Array(token.utf8))
        return digest.prefix(12).map { String(format: "%02x", $0) }.joined()
    }
}
