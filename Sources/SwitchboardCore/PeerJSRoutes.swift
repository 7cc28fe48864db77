/// The PeerJS server's HTTP routes and CORS, as a pure function of the request and the relay.
public struct PeerJSRoutes: Sendable {
    /// The mount path, normalised to start and end with `/` (config `peerjs.path`).
    public let mountPath: String
    /// Allowed CORS origins; empty reflects any request origin (config `peerjs.cors_origins`).
    public let corsOrigins: [String]

    /// Normalises `path` (`"myapp"` → `"/myapp/"`).
    public init(mountPath: String, corsOrigins: [String] = []) {
        var path = mountPath.hasPrefix("/") ? mountPath : "/" + mountPath
        if !path.hasSuffix("/") { path += "/" }
        self.mountPath = path
        self.corsOrigins = corsOrigins
    }

    /// Where PeerJS clients open their WebSocket: `<path>peerjs`.
    public var webSocketPath: String { mountPath + "peerjs" }

    /// Answers `request` if it is a PeerJS route; `nil` if the path is not under the mount path.
    /// `newID` yields candidate ids (random UUIDs) for `GET /<key>/id`.
    public func respond(to request: HTTPRequest, relay: PeerRelay, newID: () -> String) -> HTTPResponse? {
        let path = request.path
        guard path.hasPrefix(mountPath) || path + "/" == mountPath else { return nil }
        let origin = request.headers["origin"]
        if request.method == "OPTIONS" {
            return withCORS(HTTPResponse(status: 204), origin: origin, preflight: request)
        }
        return withCORS(route(request, relay: relay, newID: newID), origin: origin, preflight: nil)
    }

    private func route(_ request: HTTPRequest, relay: PeerRelay, newID: () -> String) -> HTTPResponse {
        let rest = request.path.hasPrefix(mountPath) ? String(request.path.dropFirst(mountPath.count)) : ""
        guard request.method == "GET" || request.method == "HEAD" else {
            var response = SwitchboardError(.methodNotAllowed, "only GET is served here").httpResponse
            response.headers.append(("Allow", "GET, HEAD, OPTIONS"))
            return response
        }
        if rest.isEmpty { return info }
        let parts = rest.split(separator: "/", omittingEmptySubsequences: false)
        guard parts.count == 2, parts[1] == "id" || parts[1] == "peers" else {
            return SwitchboardError(.notFound, "no route for \(request.path)").httpResponse
        }
        guard parts[0] == relay.configuration.key else {
            return SwitchboardError(.unauthenticated, "Invalid key provided").httpResponse
        }
        return parts[1] == "id" ? freshID(relay: relay, newID: newID) : peerList(relay: relay)
    }

    private var info: HTTPResponse {
        .json(200, Array(#"{"name":"PeerJS Server","description":"Switchboard: a WebRTC signaling server, PeerJS-compatible","website":"https://peerjs.com/"}"#.utf8))
    }

    private func freshID(relay: PeerRelay, newID: () -> String) -> HTTPResponse {
        var candidate = newID()
        while let id = PeerID(candidate), relay.isRegistered(id) { candidate = newID() }
        return HTTPResponse(status: 200, contentType: "text/html; charset=utf-8", body: Array(candidate.utf8))
    }

    private func peerList(relay: PeerRelay) -> HTTPResponse {
        guard relay.configuration.allowDiscovery else {
            return SwitchboardError(.unauthenticated, "peer discovery is disabled").httpResponse
        }
        var body: [UInt8] = [UInt8(ascii: "[")]
        for (index, id) in relay.registeredPeers.enumerated() {
            if index > 0 { body.append(UInt8(ascii: ",")) }
            JSONStringUnescaper.appendQuoted(id.rawValue, to: &body)
        }
        body.append(UInt8(ascii: "]"))
        return .json(200, body)
    }

    private func withCORS(_ response: HTTPResponse, origin: String?, preflight: HTTPRequest?) -> HTTPResponse {
        var response = response
        var vary = ["Origin"]
        if let origin, corsOrigins.isEmpty || corsOrigins.contains(origin) {
            response.headers.append(("Access-Control-Allow-Origin", origin))
        }
        if let preflight {
            response.headers.append(("Access-Control-Allow-Methods", "GET,HEAD,PUT,PATCH,POST,DELETE"))
            if let asked = preflight.headers["access-control-request-headers"] {
                response.headers.append(("Access-Control-Allow-Headers", asked))
                vary.append("Access-Control-Request-Headers")
            }
        }
        response.headers.append(("Vary", vary.joined(separator: ", ")))
        return response
    }
}
