import Crypto

/// Everything Switchboard provisions on a Janus SFU for a call, derived from one daemon key, so
/// the store keeps nothing secret per call or session and a room created before a crash can
/// still be destroyed: the room's id (from the call and the SFU), its secret (from the id), and
/// each participant session's access token (from the room and the session). HMAC-SHA256 keeps
/// each value unguessable to anyone without the key, including the call's other participants.
public struct SFURoomKeys: Sendable, Equatable {
    private let key: SymmetricKey

    /// The prefix of every token Switchboard grants; the reconciler only ever removes tokens
    /// with this prefix, so an operator's own Janus tokens are left alone.
    public static let tokenPrefix = "sb1."
    /// The description every room Switchboard creates starts with (the reconciler's mark).
    public static let roomDescriptionPrefix = "switchboard "

    /// `key` must hold at least 32 bytes.
    public init?(key: [UInt8]) {
        guard key.count >= 32 else { return nil }
        self.key = SymmetricKey(data: key)
    }

    /// The VideoRoom room id for `call` on `sfu`: non-zero and below 2^53 (JavaScript-safe).
    /// A call that moves gets another room; one that comes back to an SFU gets the same one.
    public func roomID(call cid: String, sfu: SFUID) -> UInt64 {
        let digest = mac("room\u{0}\(cid)\u{0}\(sfu.rawValue)")
        let value = digest.prefix(8).reduce(UInt64(0)) { $0 << 8 | UInt64($1) } & ((1 << 53) - 1)
        return value == 0 ? 1 : value
    }

    /// The room's secret (needed to destroy it or change its allowed list).
    public func roomSecret(_ room: UInt64) -> String {
        Self.hex(mac("secret\u{0}\(room)").prefix(24))
    }

    /// The room's PIN: every participant gets it. Janus checks the `allowed` tokens of
    /// publishers only; the PIN keeps a session of another call on the same Janus (whose token
    /// Janus knows) from subscribing here.
    public func roomPIN(_ room: UInt64) -> String {
        Self.hex(mac("pin\u{0}\(room)").prefix(12))
    }

    /// The token that lets `session` into `room` (the Janus session's token and the room's
    /// `allowed` entry): `sb1.` and 32 hex digits.
    public func token(room: UInt64, session: SessionID) -> String {
        Self.tokenPrefix + Self.hex(mac("token\u{0}\(room)\u{0}\(session.rawValue)").prefix(16))
    }

    public static func == (lhs: Self, rhs: Self) -> Bool {
        lhs.key.withUnsafeBytes { left in rhs.key.withUnsafeBytes { right in left.elementsEqual(right) } }
    }

    private func mac(_ text: String) -> [UInt8] {
        Array(HMAC<SHA256>.authenticationCode(for: Array(text.utf8), using: key))
    }

    private static func hex(_ bytes: some Sequence<UInt8>) -> String {
        let digits = Array("0123456789abcdef".utf8)
        var out: [UInt8] = []
        for byte in bytes {
            out.append(digits[Int(byte >> 4)])
            out.append(digits[Int(byte & 0x0F)])
        }
        return String(decoding: out, as: UTF8.self)
    }
}
