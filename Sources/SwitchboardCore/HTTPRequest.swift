/// One HTTP request as the transport read it, body complete.
public struct HTTPRequest: Sendable, Equatable {
    /// Upper-case method (`GET`, `POST`, …).
    public var method: String
    /// The URL path, percent-decoded, without the query.
    public var path: String
    /// Query parameters, URL-decoded; a repeated name keeps the last value.
    public var query: [String: String]
    /// Header fields with lower-case names.
    public var headers: [String: String]
    /// The request body (capped by the transport).
    public var body: [UInt8]
    /// The client's address as text.
    public var remoteAddress: String
    /// The listener the request arrived on.
    public var listener: ListenerRole

    public init(
        method: String, path: String, query: [String: String] = [:], headers: [String: String] = [:],
        body: [UInt8] = [], remoteAddress: String = "", listener: ListenerRole = .client
    ) {
        self.listener = listener
        self.method = method
        self.path = path
        self.query = query
        self.headers = headers
        self.body = body
        self.remoteAddress = remoteAddress
    }
}

/// One HTTP response for the transport to write.
public struct HTTPResponse: Sendable, Equatable {
    /// Status code.
    public var status: Int
    /// `Content-Type`, or `nil` for an empty body.
    public var contentType: String?
    /// Extra header fields (name without colon).
    public var headers: [(name: String, value: String)]
    /// The body.
    public var body: [UInt8]

    public init(status: Int, contentType: String? = nil, headers: [(name: String, value: String)] = [], body: [UInt8] = []) {
        self.status = status
        self.contentType = contentType
        self.headers = headers
        self.body = body
    }

    /// A JSON response from already-encoded bytes.
    public static func json(_ status: Int, _ body: [UInt8]) -> HTTPResponse {
        HTTPResponse(status: status, contentType: "application/json; charset=utf-8", body: body)
    }

    /// The value of header `name` (case-insensitive), if set.
    public func header(_ name: String) -> String? {
        headers.first { $0.name.lowercased() == name.lowercased() }?.value
    }

    public static func == (lhs: HTTPResponse, rhs: HTTPResponse) -> Bool {
        lhs.status == rhs.status && lhs.contentType == rhs.contentType && lhs.body == rhs.body
            && lhs.headers.map { "\($0.name):\($0.value)" } == rhs.headers.map { "\($0.name):\($0.value)" }
    }
}
