import SwitchboardAdmin
import SwitchboardCore
import XCTest

/// The admin API refuses what a web page can send it: a foreign Host (DNS rebinding), a foreign
/// Origin, a body that is not JSON (a cross-site form post). Checked before the token.
final class AdminRequestPolicyTests: XCTestCase {
    private let policy = AdminRequestPolicy(allowedHosts: ["admin.example.net"])

    private func request(method: String = "POST", headers: [String: String], body: String = "") -> HTTPRequest {
        HTTPRequest(method: method, path: "/v1/tokens", headers: headers, body: Array(body.utf8), listener: .admin)
    }

    func test_hostsThatAreAddressesLocalhostOrAllowedNamesPass() {
        for host in ["127.0.0.1:8081", "127.0.0.1", "[::1]:8081", "10.1.2.3:80", "localhost:8081", "ADMIN.example.net:443", "admin.example.net"] {
            XCTAssertNil(policy.refusal(for: request(method: "GET", headers: ["host": host])), host)
        }
    }

    func test_foreignOrMalformedHostsAreForbidden() {
        for host in ["evil.example", "127.0.0.1.nip.io:8081", "localhost.evil.example", "127.0.0.1:80:80", "[::1", "", "256.0.0.1"] {
            XCTAssertEqual(policy.refusal(for: request(method: "GET", headers: ["host": host]))?.code, .forbidden, host)
        }
    }

    func test_foreignOrNullOriginsAreForbidden() {
        let host = ["host": "127.0.0.1:8081"]
        XCTAssertNil(policy.refusal(for: request(method: "GET", headers: host.merging(["origin": "http://127.0.0.1:8081"]) { $1 })))
        for origin in ["http://evil.example", "null", "https://127.0.0.1.nip.io", "file://"] {
            XCTAssertEqual(policy.refusal(for: request(method: "GET", headers: host.merging(["origin": origin]) { $1 }))?.code, .forbidden, origin)
        }
    }

    func test_bodiesMustBeJSON() {
        let host = ["host": "127.0.0.1:8081"]
        XCTAssertNil(policy.refusal(for: request(headers: host.merging(["content-type": "application/json; charset=utf-8"]) { $1 }, body: "{}")))
        XCTAssertNil(policy.refusal(for: request(headers: host)), "no body, no content type: fine")
        for type in ["text/plain", "application/x-www-form-urlencoded", "multipart/form-data; boundary=x"] {
            let refusal = policy.refusal(for: request(headers: host.merging(["content-type": type]) { $1 }, body: "{}"))
            XCTAssertEqual(refusal?.code, .unsupportedMediaType, type)
            XCTAssertEqual(refusal?.httpResponse.status, 415)
        }
        XCTAssertEqual(policy.refusal(for: request(headers: host, body: "{}"))?.code, .unsupportedMediaType, "a body with no type")
    }

    func test_theRouterRefusesBeforeAuthentication() {
        let router = AdminRouter(token: "t0ken-t0ken-t0ken")
        let response = router.respond(to: request(method: "GET", headers: ["host": "evil.example", "authorization": "Bearer t0ken-t0ken-t0ken"]))
        XCTAssertEqual(response.status, 403)
    }

    func test_loopbackIsAnAddressNotAPrefix() {
        for host in ["127.0.0.1", "127.255.0.9", "::1"] { XCTAssertTrue(AdminRequestPolicy.isLoopbackAddress(host), host) }
        for host in ["127.0.0.1.nip.io", "localhost", "0.0.0.0", "128.0.0.1", "127.0.0"] {
            XCTAssertFalse(AdminRequestPolicy.isLoopbackAddress(host), host)
        }
    }
}
