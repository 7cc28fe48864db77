import Foundation
import SwitchboardCore
import SwitchboardPostgres
import XCTest

/// TLS to the database, as `store.postgres_url`'s `sslmode` and `sslrootcert` ask, against the
/// test server (which offers TLS with a certificate for `localhost` and `127.0.0.1`); the
/// server's own view (`pg_stat_ssl`) says whether the connection is encrypted.
final class PostgresTLSTests: XCTestCase {
    private func url(host: String = "127.0.0.1", _ query: String) throws -> String {
        let server = try PostgresTestServer.running()
        let database = try server.database().database
        return "postgres://\(server.user)@\(host):\(server.port)/\(database)\(query.isEmpty ? "" : "?")\(query)"
    }

    private func encrypted(_ url: String) throws -> Bool {
        let store = try PostgresStore(configuration: try PostgresStore.Configuration(url: url))
        defer { store.close() }
        return try store.usesTLS()
    }

    func test_eachSSLModeEncryptsOrNotAsLibpqWould() throws {
        let server = try PostgresTestServer.running()
        let ca = server.certificateAuthority.path
        XCTAssertFalse(try encrypted(try url("sslmode=disable")))
        XCTAssertTrue(try encrypted(try url("")), "prefer by default, and this server offers TLS")
        XCTAssertTrue(try encrypted(try url("sslmode=prefer")))
        XCTAssertTrue(try encrypted(try url("sslmode=require")), "encrypted, the certificate not checked")
        XCTAssertTrue(try encrypted(try url("sslmode=verify-ca&sslrootcert=\(ca)")))
        XCTAssertTrue(try encrypted(try url(host: "localhost", "sslmode=verify-full&sslrootcert=\(ca)")))
    }

    /// A certificate that does not chain to the given root is refused: no connection, the
    /// store unavailable (as with a server that is away), nothing sent in the clear.
    func test_aCertificateFromAnotherRootIsRefused() throws {
        let other = try PostgresTestServer.running().otherCertificateAuthority.path
        for query in ["sslmode=verify-ca&sslrootcert=\(other)", "sslmode=verify-full&sslrootcert=\(other)"] {
            let target = try url(host: "localhost", query)
            XCTAssertThrowsError(try encrypted(target), query) { error in
                XCTAssertEqual((error as? SwitchboardError)?.code, .unavailable, "\(query): \(error)")
            }
        }
        // The system's roots do not include the test's root either.
        XCTAssertThrowsError(try encrypted(try url(host: "localhost", "sslmode=verify-full"))) { error in
            XCTAssertEqual((error as? SwitchboardError)?.code, .unavailable, "\(error)")
        }
    }

    func test_badTLSParametersNameWhatIsWrong() throws {
        let ca = try PostgresTestServer.running().certificateAuthority.path
        for (query, says) in [
            ("sslmode=allow", "sslmode is allow; use disable, prefer, require, verify-ca or verify-full"),
            ("sslmode=verify-full&sslrootcert=\(ca)", "verify-full needs a host name"),
            ("sslmode=verify-ca&sslrootcert=/nonexistent/ca.pem", "sslrootcert (/nonexistent/ca.pem) is not a readable file"),
            ("sslmode=require&sslrootcert=\(ca)", "sslrootcert is used by sslmode verify-ca or verify-full only"),
            ("connect_timeout=5", "parameter connect_timeout, which Switchboard does not take"),
        ] {
            XCTAssertThrowsError(try PostgresStore.Configuration(url: "postgres://sb:secretpw@127.0.0.1/db?\(query)"), query) { error in
                XCTAssertEqual((error as? SwitchboardError)?.code, .invalidConfiguration, query)
                XCTAssertTrue("\(error)".contains(says), "\(query): \(error)")
                XCTAssertFalse("\(error)".contains("secretpw"))
            }
        }
        for (url, says) in [("postgres://sb:p%zzw@h/db", "password has a malformed percent escape"), ("postgres://s%zb@h/db", "user has a malformed")] {
            XCTAssertThrowsError(try PostgresStore.Configuration(url: url), url) { error in
                XCTAssertTrue("\(error)".contains(says), "\(url): \(error)")
            }
        }
        let decoded = try PostgresStore.Configuration(url: "postgres://sb:p%40ss@h/db")
        XCTAssertEqual(decoded.password, "p@ss")
        XCTAssertEqual(decoded.tls, .prefer)
    }
}
