import SwitchboardCore

/// Answers requests that arrive on the admin listener. Called off the signaling queue, so it
/// may block on the store and may call back into the hub.
public protocol AdminRequestHandler: Sendable {
    func respond(to request: HTTPRequest) -> HTTPResponse
}
