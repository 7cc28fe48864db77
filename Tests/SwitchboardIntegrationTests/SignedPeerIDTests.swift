import SwitchboardTesting
import XCTest

/// `peerjs.auth = "jwt"`: the PeerJS `token` must be a user token whose user is the `id`.
final class SignedPeerIDTests: XCTestCase {
    private let secret = String(repeating: "signing-secret-", count: 3)
    private let adminToken = "admin-token"

    private func daemon() throws -> TestDaemon {
        try TestDaemon(["peerjs.auth": .string("jwt"), "auth.api_secret": .string(secret), "admin.token": .string(adminToken)])
    }

    private func mint(_ daemon: TestDaemon, user: String, ttl: Int = 600) throws -> String {
        let response = try daemon.admin("POST", "/v1/tokens", token: adminToken, body: Array(#"{"user_id":"\#(user)","ttl_seconds":\#(ttl)}"#.utf8))
        XCTAssertEqual(response.status, 201, response.text)
        return try XCTUnwrap((response.json as? [String: Any])?["token"] as? String)
    }

    func test_aTokenForTheIdOpensAndRelays() throws {
        let daemon = try daemon()
        let alice = try daemon.peer(id: "alice", token: try mint(daemon, user: "alice"))
        let bob = try daemon.peer(id: "bob", token: try mint(daemon, user: "bob"))
        try alice.send(#"{"type":"OFFER","dst":"bob","payload":1}"#)
        XCTAssertEqual(try bob.next(), .text(#"{"type":"OFFER","src":"alice","dst":"bob","payload":1}"#))
    }

    func test_aTokenForAnotherUserOrAForgedOneIsRefusedBeforeRegistering() throws {
        let daemon = try daemon()
        let malloryToken = try mint(daemon, user: "mallory")
        for token in [malloryToken, "forged.jwt.token", String(malloryToken.dropLast(2)) + "xx"] {
            let client = try WebSocketTestClient.connect(port: daemon.port, path: "/peerjs?key=peerjs&id=alice&token=\(token)")
            XCTAssertEqual(try client.next(), .text(#"{"type":"ERROR","payload":{"msg":"Invalid token"}}"#), token)
            XCTAssertEqual(try client.awaitClose(), 1008)
        }
        XCTAssertFalse(daemon.daemon.hub.withRelay { $0.isRegistered(.init("alice")!) })
        _ = try daemon.peer(id: "alice", token: try mint(daemon, user: "alice"))
    }

    func test_withoutAnAPISecretTokensCannotBeMinted() throws {
        let daemon = try TestDaemon(["admin.token": .string(adminToken)])
        let response = try daemon.admin("POST", "/v1/tokens", token: adminToken, body: Array(#"{"user_id":"a"}"#.utf8))
        XCTAssertEqual(response.status, 503)
    }
}
