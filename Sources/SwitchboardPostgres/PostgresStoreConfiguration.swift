import Foundation
import NIOCore
import PostgresNIO
import SwitchboardCore

extension PostgresStore {
    /// Where the database is: from a `postgres://user[:password]@host[:port]/database` URL.
    public struct Configuration: Sendable {
        public var host: String
        public var port: Int
        public var username: String
        public var password: String?
        public var database: String

        public init(host: String, port: Int = 5432, username: String, password: String? = nil, database: String) {
            self.host = host
            self.port = port
            self.username = username
            self.password = password
            self.database = database
        }

        /// Parses `url`; a URL that is not one names what is wrong (never the password).
        public init(url: String) throws(SwitchboardError) {
            guard let parts = URLComponents(string: url), parts.scheme == "postgres" || parts.scheme == "postgresql" else {
                throw SwitchboardError(.invalidConfiguration, "a PostgreSQL URL is postgres://user[:password]@host[:port]/database")
            }
            guard let host = parts.host, !host.isEmpty else { throw SwitchboardError(.invalidConfiguration, "the PostgreSQL URL names no host") }
            guard let user = parts.user, !user.isEmpty else { throw SwitchboardError(.invalidConfiguration, "the PostgreSQL URL names no user") }
            let database = String(parts.path.drop { $0 == "/" })
            guard !database.isEmpty, !database.contains("/") else {
                throw SwitchboardError(.invalidConfiguration, "the PostgreSQL URL names no database (postgres://user@host/database)")
            }
            if let port = parts.port, !(1...65_535).contains(port) {
                throw SwitchboardError(.invalidConfiguration, "the PostgreSQL URL's port is not 1-65535")
            }
            self.init(host: host, port: parts.port ?? 5432, username: user, password: parts.password, database: database)
        }

        /// How long a connection attempt may take; past it the call fails with `unavailable`
        /// (the readiness probe makes one while the server is away).
        static let connectTimeout = TimeAmount.seconds(3)

        var connection: PostgresConnection.Configuration {
            var configuration = PostgresConnection.Configuration(
                host: host, port: port, username: username, password: password, database: database, tls: .disable)
            configuration.options.connectTimeout = Self.connectTimeout
            return configuration
        }
    }
}
