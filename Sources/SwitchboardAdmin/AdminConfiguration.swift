/// Settings of the admin API (config section `admin`).
public struct AdminConfiguration: Sendable, Equatable {
    /// How callers authenticate (`admin.auth`).
    public enum Auth: String, Sendable, Equatable {
        /// A bearer token on every route but `/healthz` (the default).
        case token
        /// No token: allowed only when the listener is on a loopback address.
        case none
    }

    public var auth: Auth
    /// The configured bearer token; with ``Auth/token`` and none configured, the daemon
    /// generates one into the state directory at start (``AdminTokenFile``).
    public var token: String?
    /// Host names accepted in `Host` and `Origin` besides IP literals and `localhost`.
    public var allowedHosts: [String]

    public init(auth: Auth = .token, token: String?, allowedHosts: [String] = []) {
        self.auth = auth
        self.token = token
        self.allowedHosts = allowedHosts
    }
}
