/// What a client frame on the PeerJS socket turned out to be.
public enum PeerJSInbound: Sendable {
    /// Not a JSON object (bad syntax, empty, truncated, a primitive, `null`, too deep).
    case malformed(JSONScanner.Failure)
    /// A JSON object whose `type` is missing, not a string, or not one the server handles.
    case ignored
    /// A message the relay acts on.
    case message(PeerJSMessage)

    /// Parses one complete frame. Binary frames must also be valid UTF-8, since they are
    /// relayed as text.
    public static func parse(_ bytes: [UInt8], isBinary: Bool) -> PeerJSInbound {
        if isBinary, String(validating: bytes, as: UTF8.self) == nil {
            return .malformed(.syntax(offset: 0))
        }
        let members: [JSONScanner.Member]
        do {
            members = try JSONScanner.topLevelMembers(of: bytes)
        } catch {
            return .malformed(error)
        }
        var type: Range<Int>?
        var dst: Range<Int>?
        var payload: Range<Int>?
        for member in members {
            switch member.key {
            case "type": type = member.value
            case "dst": dst = member.value
            case "payload": payload = member.value
            default: continue
            }
        }
        guard let type, let name = JSONScanner.decodeString(bytes, type),
            let kind = PeerJSMessageType(rawValue: name)
        else { return .ignored }
        let destination = dst.flatMap { JSONScanner.decodeString(bytes, $0) }
        return .message(PeerJSMessage(type: kind, destination: destination, bytes: bytes, payload: payload))
    }
}

/// A validated PeerJS message: its type, destination and the raw bytes of its payload.
public struct PeerJSMessage: Sendable {
    /// The message type.
    public let type: PeerJSMessageType
    /// The `dst` field when it was a string; `nil` when missing or not a string.
    public let destination: String?
    /// The whole frame as received.
    public let bytes: [UInt8]
    /// Where the `payload` value sits in ``bytes``; `nil` when the key was absent.
    public let payload: Range<Int>?

    /// The payload's raw JSON bytes, if any.
    public var payloadBytes: ArraySlice<UInt8>? { payload.map { bytes[$0] } }
}
