/// Settings of user tokens (config section `auth`).
public struct AuthConfiguration: Sendable, Equatable {
    /// The API key's id, written as the token's `kid`.
    public var apiKey: String
    /// The API key's secret (HS256); `nil` disables minting and verifying.
    public var apiSecret: String?
    /// Clock skew tolerated on `exp`, `nbf` and `iat`.
    public var leeway: Duration

    public init(apiKey: String = "switchboard", apiSecret: String?, leeway: Duration = .seconds(5)) {
        self.apiKey = apiKey
        self.apiSecret = apiSecret
        self.leeway = leeway
    }
}
