/// Builders for every frame the server sends on a PeerJS socket.
///
/// Relayed messages are rebuilt with exactly the keys `type, src, dst, payload` in that
/// order; the payload's bytes are copied, never re-encoded.
public enum PeerJSOutbound {
    /// `{"type":"OPEN"}`.
    public static let open: [UInt8] = Array(#"{"type":"OPEN"}"#.utf8)

    /// The relayed copy of `message`, stamped with the sender's id.
    public static func relay(_ message: PeerJSMessage, from source: PeerID, to destination: String) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(message.bytes.count + source.rawValue.utf8.count + 48)
        out.append(contentsOf: #"{"type":"#.utf8)
        JSONStringUnescaper.appendQuoted(message.type.rawValue, to: &out)
        out.append(contentsOf: #","src":"#.utf8)
        JSONStringUnescaper.appendQuoted(source.rawValue, to: &out)
        out.append(contentsOf: #","dst":"#.utf8)
        JSONStringUnescaper.appendQuoted(destination, to: &out)
        if let payload = message.payloadBytes {
            out.append(contentsOf: #","payload":"#.utf8)
            out.append(contentsOf: payload)
        }
        out.append(UInt8(ascii: "}"))
        return out
    }

    /// `{"type":"ERROR","payload":{"msg":…}}`.
    public static func error(_ text: String) -> [UInt8] {
        var out: [UInt8] = Array(#"{"type":"ERROR","payload":{"msg":"#.utf8)
        JSONStringUnescaper.appendQuoted(text, to: &out)
        out.append(contentsOf: "}}".utf8)
        return out
    }

    /// `{"type":"ID-TAKEN","payload":{"msg":"ID is taken"}}`.
    public static let idTaken: [UInt8] = Array(#"{"type":"ID-TAKEN","payload":{"msg":"ID is taken"}}"#.utf8)

    /// `{"type":"EXPIRE","src":<offline peer>,"dst":<sender>}`: the message could not be delivered.
    public static func expire(offlinePeer: String, sender: PeerID) -> [UInt8] {
        control("EXPIRE", source: offlinePeer, destination: sender.rawValue)
    }

    /// `{"type":"LEAVE","src":<peer>,"dst":<recipient>}`: the peer is gone.
    public static func leave(peer: PeerID, recipient: PeerID) -> [UInt8] {
        control("LEAVE", source: peer.rawValue, destination: recipient.rawValue)
    }

    private static func control(_ type: String, source: String, destination: String) -> [UInt8] {
        var out: [UInt8] = Array(#"{"type":"#.utf8)
        JSONStringUnescaper.appendQuoted(type, to: &out)
        out.append(contentsOf: #","src":"#.utf8)
        JSONStringUnescaper.appendQuoted(source, to: &out)
        out.append(contentsOf: #","dst":"#.utf8)
        JSONStringUnescaper.appendQuoted(destination, to: &out)
        out.append(UInt8(ascii: "}"))
        return out
    }

    /// The texts of the handshake errors, exactly as the PeerJS server words them.
    public enum ErrorText {
        public static let missingParameters = "No id, token, or key supplied to websocket server"
        public static let invalidKey = "Invalid key provided"
        public static let concurrentLimit = "Server has reached its concurrent user limit"
        /// With `peerjs.auth = "jwt"`: the token is not a valid user token for this id.
        public static let invalidToken = "Invalid token"
    }
}
