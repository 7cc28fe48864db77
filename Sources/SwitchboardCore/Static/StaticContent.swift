/// How a static file is answered: its media type by extension, a validator (ETag) from its size
/// and modification time, and `304 Not Modified` when the client already holds that version.
///
/// Every answer says `Cache-Control: no-cache`: a browser keeps the file but asks again each
/// time (a cheap 304), so an SDK or demo page at an unversioned URL is never stale after an
/// upgrade. `X-Content-Type-Options: nosniff` keeps browsers to the declared type.
public enum StaticContent {
    /// Media types by lower-case extension; anything else is `application/octet-stream`.
    public static let mediaTypes: [String: String] = [
        "html": "text/html; charset=utf-8",
        "js": "text/javascript; charset=utf-8",
        "mjs": "text/javascript; charset=utf-8",
        "css": "text/css; charset=utf-8",
        "json": "application/json; charset=utf-8",
        "map": "application/json; charset=utf-8",
        "ts": "text/plain; charset=utf-8",
        "txt": "text/plain; charset=utf-8",
        "md": "text/markdown; charset=utf-8",
        "svg": "image/svg+xml",
        "png": "image/png",
        "jpg": "image/jpeg",
        "jpeg": "image/jpeg",
        "gif": "image/gif",
        "webp": "image/webp",
        "ico": "image/x-icon",
        "wasm": "application/wasm",
        "woff2": "font/woff2",
        "webmanifest": "application/manifest+json",
    ]

    /// The media type of `fileName` by its extension.
    public static func mediaType(of fileName: String) -> String {
        guard let dot = fileName.lastIndex(of: "."), dot != fileName.startIndex else { return "application/octet-stream" }
        return mediaTypes[fileName[fileName.index(after: dot)...].lowercased()] ?? "application/octet-stream"
    }

    /// A strong validator from the file's size and modification time (nanoseconds since 1970).
    public static func entityTag(size: Int, modifiedNanoseconds: Int64) -> String {
        "\"\(String(size, radix: 16))-\(String(modifiedNanoseconds, radix: 16))\""
    }

    /// Whether an `If-None-Match` value names `tag` (or is `*`).
    public static func matches(ifNoneMatch header: String?, tag: String) -> Bool {
        guard let header else { return false }
        return header.split(separator: ",").contains { candidate in
            let trimmed = candidate.trimmingSpaces
            return trimmed == "*" || trimmed == tag || trimmed == "W/" + tag
        }
    }

    /// The answer to `request` for a file named `fileName` with these bytes and validator.
    public static func response(to request: HTTPRequest, fileName: String, body: [UInt8], tag: String) -> HTTPResponse {
        var headers: [(name: String, value: String)] = [
            ("ETag", tag), ("Cache-Control", "no-cache"), ("X-Content-Type-Options", "nosniff"),
        ]
        if matches(ifNoneMatch: request.headers["if-none-match"], tag: tag) {
            return HTTPResponse(status: 304, headers: headers)
        }
        headers.append(("Accept-Ranges", "none"))
        return HTTPResponse(status: 200, contentType: mediaType(of: fileName), headers: headers, body: body)
    }

    /// `405` for any method but GET and HEAD.
    public static func methodNotAllowed(_ request: HTTPRequest) -> HTTPResponse? {
        guard request.method != "GET", request.method != "HEAD" else { return nil }
        var response = SwitchboardError(.methodNotAllowed, "static files are served to GET and HEAD only").httpResponse
        response.headers.append(("Allow", "GET, HEAD"))
        return response
    }

    /// `301` to `location`.
    public static func redirect(to location: String) -> HTTPResponse {
        HTTPResponse(status: 301, headers: [("Location", location), ("Cache-Control", "no-cache")])
    }
}

extension Substring {
    fileprivate var trimmingSpaces: Substring {
        var text = self
        while text.first == " " || text.first == "\t" { text = text.dropFirst() }
        while text.last == " " || text.last == "\t" { text = text.dropLast() }
        return text
    }
}
