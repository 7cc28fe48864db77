import Foundation
import SwitchboardAdmin
import SwitchboardCore
import XCTest

final class DevTokenRouteTests: XCTestCase {
    /// A minting port that records what it was asked.
    final class Minted: @unchecked Sendable {
        let lock = NSLock()
        var requests: [TokenRequest] = []
    }

    func route(_ minted: Minted, failing: SwitchboardError? = nil) -> DevTokenRoute {
        DevTokenRoute { request throws(SwitchboardError) in
            if let failing { throw failing }
            minted.lock.withLock { minted.requests.append(request) }
            let expires = Date(timeIntervalSince1970: 1_800_000_000)
            return ("tok-\(request.userID)", UserToken(userID: request.userID, issuedAt: expires.addingTimeInterval(-60), expiresAt: expires))
        }
    }

    func post(_ body: String, from address: String = "127.0.0.1", method: String = "POST") -> HTTPRequest {
        HTTPRequest(method: method, path: DevTokenRoute.path, body: Array(body.utf8), remoteAddress: address)
    }

    func json(_ response: HTTPResponse) throws -> [String: Any] {
        try XCTUnwrap(JSONSerialization.jsonObject(with: Data(response.body)) as? [String: Any])
    }

    func test_aLoopbackClientGetsATokenForTheUserItAsks() throws {
        let minted = Minted()
        let response = route(minted).respond(to: post(#"{"user_id":"alice","ttl_seconds":60}"#))
        XCTAssertEqual(response.status, 201)
        XCTAssertEqual(response.header("Cache-Control"), "no-store")
        let body = try json(response)
        XCTAssertEqual(body["token"] as? String, "tok-alice")
        XCTAssertEqual(body["user_id"] as? String, "alice")
        XCTAssertEqual(body["expires_at"] as? String, "2027-01-15T08:00:00Z")
        XCTAssertEqual(minted.requests, [TokenRequest(userID: "alice", ttl: .seconds(60))])
    }

    func test_theLifetimeDefaultsToAnHourAndIsCapped() {
        let minted = Minted()
        XCTAssertEqual(route(minted).respond(to: post(#"{"user_id":"bob"}"#)).status, 201)
        XCTAssertEqual(minted.requests.first?.ttl, .seconds(3600))
        for ttl in ["0", "86401", "-5"] {
            XCTAssertEqual(route(minted).respond(to: post(#"{"user_id":"bob","ttl_seconds":\#(ttl)}"#)).status, 400, ttl)
        }
    }

    func test_noRoleAndNoCallListEvenWhenAsked() {
        let minted = Minted()
        _ = route(minted).respond(to: post(#"{"user_id":"eve","role":"admin","call_cids":["default:x"]}"#))
        XCTAssertEqual(minted.requests, [TokenRequest(userID: "eve", ttl: .seconds(3600))])
    }

    func test_onlyLoopbackAddressesAreServed() throws {
        let minted = Minted()
        for address in ["127.0.0.1", "127.8.9.10", "::1", "::ffff:127.0.0.1"] {
            XCTAssertEqual(route(minted).respond(to: post(#"{"user_id":"a"}"#, from: address)).status, 201, address)
        }
        for address in ["10.0.0.1", "192.168.1.2", "::ffff:10.0.0.1", "2001:db8::1", "", "localhost"] {
            let response = route(minted).respond(to: post(#"{"user_id":"a"}"#, from: address))
            XCTAssertEqual(response.status, 403, address)
            XCTAssertEqual((try json(response)["error"] as? [String: Any])?["code"] as? String, "forbidden")
        }
        XCTAssertEqual(minted.requests.count, 4)
    }

    func test_badInputIsAClearError() throws {
        let minted = Minted()
        let get = route(minted).respond(to: post("", method: "GET"))
        XCTAssertEqual(get.status, 405)
        XCTAssertEqual(get.header("Allow"), "POST")
        XCTAssertEqual(route(minted).respond(to: post("not json")).status, 400)
        XCTAssertEqual(route(minted).respond(to: post(#"{"ttl_seconds":5}"#)).status, 400)
        // The minting port's own refusal (a bad user id, no API secret) is passed on.
        let refused = route(minted, failing: SwitchboardError(.unavailable, "no API secret is configured (auth.api_secret)"))
            .respond(to: post(#"{"user_id":"a"}"#))
        XCTAssertEqual(refused.status, 503)
        XCTAssertTrue(minted.requests.isEmpty)
    }
}
