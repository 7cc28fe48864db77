/// Settings of the admin API (config section `admin`).
public struct AdminConfiguration: Sendable, Equatable {
    /// The bearer token every route but `/healthz` requires; `nil` disables the check, which the
    /// configuration allows only on a loopback address.
    public var token: String?

    public init(token: String?) { self.token = token }
}
