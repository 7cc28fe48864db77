import CLibWebSockets

/// Reading the request line, query and headers that lws parsed.
enum LWSHeaders {
    /// Header fields the application may look at, by lower-case name.
    static let tokens: [(String, lws_token_indexes)] = [
        ("host", WSI_TOKEN_HOST),
        ("origin", WSI_TOKEN_ORIGIN),
        ("authorization", WSI_TOKEN_HTTP_AUTHORIZATION),
        ("content-type", WSI_TOKEN_HTTP_CONTENT_TYPE),
        ("user-agent", WSI_TOKEN_HTTP_USER_AGENT),
        ("x-forwarded-for", WSI_TOKEN_X_FORWARDED_FOR),
        ("sec-websocket-protocol", WSI_TOKEN_PROTOCOL),
        ("access-control-request-headers", WSI_TOKEN_HTTP_AC_REQUEST_HEADERS),
        ("if-none-match", WSI_TOKEN_HTTP_IF_NONE_MATCH),
    ]

    /// Custom (non-token) headers read by name.
    static let custom = ["access-control-request-method"]

    static func copy(_ wsi: OpaquePointer, _ token: lws_token_indexes) -> String? {
        let length = Int(lws_hdr_total_length(wsi, token))
        guard length > 0 else { return nil }
        var buffer = [CChar](repeating: 0, count: length + 1)
        let copied = Int(lws_hdr_copy(wsi, &buffer, Int32(buffer.count), token))
        guard copied >= 0 else { return nil }
        // All `copied` bytes: a decoded %00 stays in the value (and is refused by whoever reads
        // it) instead of cutting the value short, which would let `/x.js%00.png` name `/x.js`.
        return String(decoding: buffer.prefix(min(copied, length)).map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    static func headers(_ wsi: OpaquePointer) -> [String: String] {
        var result: [String: String] = [:]
        for (name, token) in tokens {
            if let value = copy(wsi, token) { result[name] = value }
        }
        for name in custom {
            let key = name + ":"
            let length = Int(lws_hdr_custom_length(wsi, key, Int32(key.utf8.count)))
            guard length > 0 else { continue }
            var buffer = [CChar](repeating: 0, count: length + 1)
            if lws_hdr_custom_copy(wsi, &buffer, Int32(buffer.count), key, Int32(key.utf8.count)) >= 0 {
                result[name] = String(decoding: buffer.prefix(while: { $0 != 0 }).map { UInt8(bitPattern: $0) }, as: UTF8.self)
            }
        }
        return result
    }

    /// The URL-decoded query parameters; a repeated name keeps the last value.
    static func query(_ wsi: OpaquePointer) -> [String: String] {
        var result: [String: String] = [:]
        var buffer = [CChar](repeating: 0, count: 4096)
        var index: Int32 = 0
        while lws_hdr_copy_fragment(wsi, &buffer, Int32(buffer.count), WSI_TOKEN_HTTP_URI_ARGS, index) >= 0 {
            index += 1
            let text = String(decoding: buffer.prefix(while: { $0 != 0 }).map { UInt8(bitPattern: $0) }, as: UTF8.self)
            guard !text.isEmpty else { continue }
            if let equals = text.firstIndex(of: "=") {
                result[String(text[..<equals])] = String(text[text.index(after: equals)...])
            } else {
                result[text] = ""
            }
        }
        return result
    }

    /// The methods lws parses and serves as HTTP (it also knows `CONNECT`, which it hands over
    /// as a raw socket); it matches them case-insensitively.
    static let methods: [(name: String, token: lws_token_indexes)] = [
        ("GET", WSI_TOKEN_GET_URI), ("POST", WSI_TOKEN_POST_URI), ("PUT", WSI_TOKEN_PUT_URI),
        ("DELETE", WSI_TOKEN_DELETE_URI), ("PATCH", WSI_TOKEN_PATCH_URI),
        ("OPTIONS", WSI_TOKEN_OPTIONS_URI), ("HEAD", WSI_TOKEN_HEAD_URI),
    ]

    /// The request method and path.
    static func requestLine(_ wsi: OpaquePointer) -> (method: String, path: String)? {
        for (method, token) in methods {
            if let path = copy(wsi, token) { return (method, path) }
        }
        return nil
    }

    static func peerAddress(_ wsi: OpaquePointer) -> String {
        var buffer = [CChar](repeating: 0, count: 64)
        guard let text = lws_get_peer_simple(wsi, &buffer, buffer.count) else { return "" }
        return String(cString: text)
    }
}
