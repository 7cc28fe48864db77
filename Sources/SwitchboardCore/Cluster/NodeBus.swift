/// One message between the daemons of a cluster: its id (unique per sender; duplicates are
/// dropped), the sending node, what it is (for the receiver's dispatch) and its body (usually
/// JSON, such as a ``TunnelBatch``).
public struct NodeMessage: Sendable, Equatable, Codable {
    public var id: String
    public var from: String
    public var kind: String
    public var body: String

    public init(id: String, from: String, kind: String, body: String) {
        self.id = id
        self.from = from
        self.kind = kind
        self.body = body
    }
}

extension NodeMessage {
    /// The message as JSON, the text its `Codable` conformance writes (its body one string).
    public func json() -> [UInt8] {
        var out = TunnelJSONWriter(capacity: body.utf8.count + body.utf8.count / 8 + 96)
        out.beginObject()
        for (key, value) in [("id", id), ("from", from), ("kind", kind), ("body", body)] {
            out.key(key)
            out.string(value)
        }
        out.endObject()
        return out.bytes
    }

    /// Reads a message's JSON; `nil` when it is no message (a payload by reference).
    public static func read(_ bytes: [UInt8]) -> NodeMessage? {
        try? TunnelJSONReader.read(bytes) { reader throws(TunnelJSONReader.Malformed) -> NodeMessage in
            var fields: [String: String] = [:]
            try reader.object { reader, key throws(TunnelJSONReader.Malformed) in
                if ["id", "from", "kind", "body"].contains(key) { fields[key] = try reader.string() } else { try reader.skipValue() }
            }
            guard let id = fields["id"], let from = fields["from"], let kind = fields["kind"], let body = fields["body"] else {
                throw reader.fail("a message without id, from, kind and body")
            }
            return NodeMessage(id: id, from: from, kind: kind, body: body)
        }
    }
}

/// The bus between the daemons of one cluster (ADR 0012): each node listens for the messages
/// sent to it; a message to a node that does not listen is lost. `PostgresBus` carries it over
/// the database's `LISTEN`/`NOTIFY`; `InMemoryNodeBus` (SwitchboardTesting) in process.
public protocol NodeBus: Sendable {
    /// This node's id: where messages to it are sent, and the `from` of its messages.
    var node: String { get }

    /// Listens until the task is cancelled: `listening` each time it listens (again), `lost`
    /// when listening stopped (messages sent until the next `listening` are lost), `deliver`
    /// once per message id, in order of arrival.
    func run(listening: @Sendable () async -> Void, lost: @Sendable () async -> Void, deliver: @Sendable (NodeMessage) async -> Void) async

    /// Sends `message` to `node`. Throws when the bus cannot take it.
    func send(_ message: NodeMessage, to node: String) async throws

    /// Stops sending; listening stops with `run`'s task.
    func close() async
}
