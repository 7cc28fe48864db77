extension HTTPResponse {
    /// The whole response as HTTP/1.1 bytes, ending the connection (`Connection: close`). For
    /// answers the transport writes itself, where libwebsockets would label the status line with
    /// the version it has not parsed yet (an upgrade it refuses gets `HTTP/1.0` from lws).
    public func closingHTTP11Bytes() -> [UInt8] {
        var head = "HTTP/1.1 \(status) \(Self.reasonPhrase(status))\r\n"
        if let contentType { head += "content-type: \(contentType)\r\n" }
        head += "content-length: \(body.count)\r\n"
        for header in headers {
            head += "\(header.name.lowercased()): \(header.value)\r\n"
        }
        head += "connection: close\r\n\r\n"
        return Array(head.utf8) + body
    }

    /// The reason phrase for the statuses the daemon sends (RFC 9110).
    public static func reasonPhrase(_ status: Int) -> String {
        switch status {
        case 200: "OK"
        case 201: "Created"
        case 204: "No Content"
        case 400: "Bad Request"
        case 401: "Unauthorized"
        case 403: "Forbidden"
        case 404: "Not Found"
        case 405: "Method Not Allowed"
        case 409: "Conflict"
        case 413: "Content Too Large"
        case 415: "Unsupported Media Type"
        case 426: "Upgrade Required"
        case 429: "Too Many Requests"
        case 500: "Internal Server Error"
        case 503: "Service Unavailable"
        default: status < 400 ? "OK" : "Error"
        }
    }
}
