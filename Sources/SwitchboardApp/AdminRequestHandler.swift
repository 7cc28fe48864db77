import SwitchboardCore

/// Answers requests that arrive on the admin listener. Called off the signaling queue, so it
/// may block on the store and may call back into the hub.
public protocol AdminRequestHandler: Sendable {
    func respond(to request: HTTPRequest) -> HTTPResponse
}

/// Answers the client listener's own HTTP routes beside PeerJS's (static files, development
/// tokens). ``handles(_:)`` is asked on the signaling queue and must be a pure check of the
/// path; ``respond(to:)`` runs off that queue, so it may read files or sign tokens.
public protocol ClientRequestHandler: Sendable {
    func handles(_ path: String) -> Bool
    func respond(to request: HTTPRequest) -> HTTPResponse
}
