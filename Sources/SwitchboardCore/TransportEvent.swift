/// What a transport reports to the application, in order per connection.
public enum TransportEvent: Sendable, Equatable {
    /// A WebSocket upgrade completed on one of the configured paths.
    case opened(ConnectionID, WebSocketUpgrade)
    /// A complete (reassembled) message arrived.
    case message(ConnectionID, [UInt8], isBinary: Bool)
    /// The WebSocket closed, for any reason; no event for this id follows.
    case closed(ConnectionID)
    /// A plain HTTP request arrived; answer it with ``OutboundCommand/respond(_:_:)``.
    case request(ConnectionID, HTTPRequest)
}

/// The request line and headers of a completed WebSocket upgrade.
public struct WebSocketUpgrade: Sendable, Equatable {
    /// The path the client connected to (e.g. `/peerjs`).
    public var path: String
    /// Query parameters, URL-decoded; a repeated name keeps the last value.
    public var query: [String: String]
    /// Selected header fields, lower-case names (`origin`, `authorization`, `user-agent`).
    public var headers: [String: String]
    /// The client's address as text.
    public var remoteAddress: String

    public init(path: String, query: [String: String] = [:], headers: [String: String] = [:], remoteAddress: String = "") {
        self.path = path
        self.query = query
        self.headers = headers
        self.remoteAddress = remoteAddress
    }
}

/// What the application asks a transport to do.
public enum OutboundCommand: Sendable, Equatable {
    /// Queue a text frame on a WebSocket.
    case send(ConnectionID, [UInt8])
    /// Queue a binary frame on a WebSocket (the test-only echo protocol).
    case sendBinary(ConnectionID, [UInt8])
    /// Close a WebSocket after the frames already queued.
    case close(ConnectionID, CloseCode, reason: String)
    /// Answer the HTTP request pending on a connection.
    case respond(ConnectionID, HTTPResponse)

    /// The connection the command is for.
    public var connection: ConnectionID {
        switch self {
        case .send(let id, _), .sendBinary(let id, _), .close(let id, _, _), .respond(let id, _): id
        }
    }
}
