import Foundation
import NIOCore
import NIOSSL
import PostgresNIO
import SwitchboardCore

extension PostgresStore {
    /// Where the database is: from a `postgres://user[:password]@host[:port]/database` URL,
    /// with libpq's `sslmode` and `sslrootcert` as its only query parameters.
    public struct Configuration: Sendable {
        public var host: String
        public var port: Int
        public var username: String
        public var password: String?
        public var database: String
        /// TLS to the server (`sslmode`, as libpq means it; `prefer` unless the URL says).
        public var tls: TLSMode

        /// libpq's `sslmode`s but `allow`. `verifyCA` and `verifyFull` trust the PEM roots at
        /// `rootCertificates` (`sslrootcert`), or the system's when `nil`.
        public enum TLSMode: Sendable, Equatable {
            /// Never encrypted.
            case disable
            /// Encrypted when the server offers it, else not; the certificate is not checked.
            case prefer
            /// Always encrypted; the certificate is not checked.
            case require
            /// Always encrypted; the certificate must chain to a trusted root.
            case verifyCA(rootCertificates: String?)
            /// As `verifyCA`, and the certificate must name the URL's host.
            case verifyFull(rootCertificates: String?)
        }

        public init(host: String, port: Int = 5432, username: String, password: String? = nil, database: String, tls: TLSMode = .prefer) {
            self.host = host
            self.port = port
            self.username = username
            self.password = password
            self.database = database
            self.tls = tls
        }

        /// Parses `url`; a URL that is not one names what is wrong (never the password).
        public init(url: String) throws(SwitchboardError) {
            guard let parts = URLComponents(string: url), parts.scheme == "postgres" || parts.scheme == "postgresql" else {
                throw SwitchboardError(.invalidConfiguration, "a PostgreSQL URL is postgres://user[:password]@host[:port]/database")
            }
            guard let host = parts.host, !host.isEmpty else { throw SwitchboardError(.invalidConfiguration, "the PostgreSQL URL names no host") }
            // URLComponents takes a malformed escape ("p%zz") as a literal "%": refused instead,
            // as libpq does, since the operator meant some other character.
            if let part = Self.malformedEscape(in: url) {
                throw SwitchboardError(.invalidConfiguration, "the PostgreSQL URL's \(part) has a malformed percent escape (% not followed by two hex digits)")
            }
            guard let user = parts.user, !user.isEmpty else { throw SwitchboardError(.invalidConfiguration, "the PostgreSQL URL names no user") }
            let database = String(parts.path.drop { $0 == "/" })
            guard !database.isEmpty, !database.contains("/") else {
                throw SwitchboardError(.invalidConfiguration, "the PostgreSQL URL names no database (postgres://user@host/database)")
            }
            if let port = parts.port, !(1...65_535).contains(port) {
                throw SwitchboardError(.invalidConfiguration, "the PostgreSQL URL's port is not 1-65535")
            }
            let tls = try Self.tlsMode(parts.queryItems ?? [], host: host)
            self.init(host: host, port: parts.port ?? 5432, username: user, password: parts.password, database: database, tls: tls)
        }

        /// The part of `url` (user, password, host or path and query) holding a `%` not followed
        /// by two hex digits; `nil` when there is none.
        private static func malformedEscape(in url: String) -> String? {
            let bytes = Array(url.utf8)
            let isHex = { (byte: UInt8) in (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) || (UInt8(ascii: "a")...UInt8(ascii: "f")).contains(byte | 0x20) }
            guard let bad = bytes.indices.first(where: { index in
                bytes[index] == UInt8(ascii: "%") && !(index + 2 < bytes.count && isHex(bytes[index + 1]) && isHex(bytes[index + 2]))
            }) else { return nil }
            let start = (bytes.firstIndex(of: UInt8(ascii: ":")) ?? 0) + 3
            let at = bytes[start...].firstIndex(of: UInt8(ascii: "@"))
            guard let at, bad < at else { return "host, path or query" }
            let colon = bytes[start..<at].firstIndex(of: UInt8(ascii: ":"))
            return colon.map { bad > $0 ? "password" : "user" } ?? "user"
        }

        private static func tlsMode(_ items: [URLQueryItem], host: String) throws(SwitchboardError) -> TLSMode {
            var mode = "prefer"
            var roots: String?
            for item in items {
                switch item.name {
                case "sslmode": mode = item.value ?? ""
                case "sslrootcert":
                    guard let path = item.value, !path.isEmpty, FileManager.default.isReadableFile(atPath: path) else {
                        throw SwitchboardError(.invalidConfiguration, "the PostgreSQL URL's sslrootcert (\(item.value ?? "")) is not a readable file")
                    }
                    roots = path
                default:
                    throw SwitchboardError(
                        .invalidConfiguration, "the PostgreSQL URL has parameter \(item.name), which Switchboard does not take (only sslmode and sslrootcert)")
                }
            }
            let tls: TLSMode
            switch mode {
            case "disable": tls = .disable
            case "prefer": tls = .prefer
            case "require": tls = .require
            case "verify-ca": tls = .verifyCA(rootCertificates: roots)
            case "verify-full":
                // NIOSSL checks a certificate against a host name only (an IP address is not a
                // valid TLS server name), so verify-full would silently skip the check.
                if host.first == "[" || host.allSatisfy({ $0.isNumber || $0 == "." }) {
                    throw SwitchboardError(
                        .invalidConfiguration, "the PostgreSQL URL's sslmode verify-full needs a host name, not an IP address; use verify-ca with an address")
                }
                tls = .verifyFull(rootCertificates: roots)
            default:
                throw SwitchboardError(
                    .invalidConfiguration, "the PostgreSQL URL's sslmode is \(mode); use disable, prefer, require, verify-ca or verify-full")
            }
            if roots != nil, tls == .disable || tls == .prefer || tls == .require {
                throw SwitchboardError(.invalidConfiguration, "the PostgreSQL URL's sslrootcert is used by sslmode verify-ca or verify-full only")
            }
            return tls
        }

        /// How long a connection attempt may take; past it the call fails with `unavailable`
        /// (the readiness probe makes one while the server is away).
        static let connectTimeout = TimeAmount.seconds(3)

        /// What postgres-nio connects with; throws when the root certificates cannot be read.
        func connection() throws(SwitchboardError) -> PostgresConnection.Configuration {
            var configuration = PostgresConnection.Configuration(
                host: host, port: port, username: username, password: password, database: database, tls: try postgresTLS())
            configuration.options.connectTimeout = Self.connectTimeout
            return configuration
        }

        private func postgresTLS() throws(SwitchboardError) -> PostgresConnection.Configuration.TLS {
            var client = TLSConfiguration.makeClientConfiguration()
            let roots: String?
            switch tls {
            case .disable: return .disable
            case .prefer, .require:
                client.certificateVerification = .none
                roots = nil
            case .verifyCA(let path):
                client.certificateVerification = .noHostnameVerification
                roots = path
            case .verifyFull(let path):
                client.certificateVerification = .fullVerification
                roots = path
            }
            if let roots { client.trustRoots = .file(roots) }
            do {
                let context = try NIOSSLContext(configuration: client)
                return tls == .prefer ? .prefer(context) : .require(context)
            } catch {
                throw SwitchboardError(.invalidConfiguration, "the PostgreSQL URL's TLS settings: \(error)")
            }
        }
    }
}
