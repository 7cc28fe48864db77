import Foundation
import SwitchboardApp
import SwitchboardTesting
import XCTest

/// Authentication on `/v1/connect`: bad tokens are refused with a stable code and close 4001
/// before any state exists; tokens expire, are warned about and refreshed in place.
final class CallAuthTests: XCTestCase {
    private let secret = TestDaemon.callSecret

    private func counts(_ daemon: TestDaemon) -> [Int] {
        daemon.daemon.calls?.withGateway { [$0.clients.count, $0.socketCount, $0.pendingCount] } ?? []
    }

    /// The hand-made tokens below are only meaningful if their HMAC is right.
    func test_theTestsHMACMatchesKnownVectorsAndTheDaemonsOwnSignature() throws {
        let fox = Array("The quick brown fox jumps over the lazy dog".utf8)
        XCTAssertEqual(
            TestJWT.hex(TestHMAC.sha256(key: Array("key".utf8), message: fox)), "f7bc83f430538424b13298e6aa6fb143ef4d59a14946175997479dbc2d1a3cd8")
        XCTAssertEqual(
            TestJWT.hex(TestHMAC.sha512(key: Array("key".utf8), message: fox)),
            "b42af09057bac1e2d41708e48a902e09b5ff7f12ab428a4fe86653c73dd248fb82f948a549f7b791a5b41915ee4d1ec3935357e4e2317250d0372afa2ebeeb3a")
        let longKey = [UInt8](repeating: UInt8(ascii: "k"), count: 200)
        let longMessage = [UInt8](repeating: UInt8(ascii: "m"), count: 300)
        XCTAssertEqual(
            TestJWT.hex(TestHMAC.sha256(key: longKey, message: longMessage)), "b232c078380bb17bdc3d4d4359919b99f2239f80e1dfd5c773c5c4a64b1b81a0")
        XCTAssertEqual(
            TestJWT.hex(TestHMAC.sha512(key: longKey, message: longMessage)),
            "162c578b0b960f0798f43dc8c757c4e3e2ca118a8b339c9fea4a6c796e7bcc3da99b4d1ae58e1fdb8a361660562257f0b9a506defa8c74de63fd202ba8d8246b")

        let daemon = try TestDaemon.calls()
        let minted = try daemon.mintToken(user: "alice").split(separator: ".").map(String.init)
        XCTAssertEqual(minted.count, 3)
        XCTAssertEqual(TestJWT.base64URL(TestHMAC.sha256(key: Array(secret.utf8), message: Array("\(minted[0]).\(minted[1])".utf8))), minted[2])
        let handMade = TestJWT.make(TestJWT.claims(user: "zoe", expiresAt: Date() + 600), secret: secret)
        XCTAssertEqual(try CallTestClient.connect(daemon, token: handMade, name: "zoe").userID, "zoe")
    }

    func test_forgedExpiredUnsignedAndHS512TokensAreRefusedWith4001BeforeAnythingIsCreated() throws {
        let daemon = try TestDaemon.calls()
        let now = Date()
        let valid = TestJWT.claims(user: "mallory", expiresAt: now + 600)
        let minted = try daemon.mintToken(user: "mallory").split(separator: ".").map(String.init)
        let otherUser = TestJWT.base64URL(TestJWT.json(TestJWT.claims(user: "alice", expiresAt: now + 600)))
        let cases: [(label: String, token: String, code: String)] = [
            ("signed with another secret", TestJWT.make(valid, secret: String(repeating: "not-the-api-secret-", count: 3)), "token_invalid"),
            ("payload swapped under a real signature", "\(minted[0]).\(otherUser).\(minted[2])", "token_invalid"),
            ("expired an hour ago", TestJWT.make(TestJWT.claims(user: "mallory", issuedAt: now - 7200, expiresAt: now - 3600), secret: secret), "token_expired"),
            ("expired within the leeway", TestJWT.make(TestJWT.claims(user: "mallory", issuedAt: now - 60, expiresAt: now - 2), secret: secret), "token_expired"),
            ("alg none", TestJWT.make(valid, secret: secret, algorithm: .none), "token_invalid"),
            ("HS512 with the right secret", TestJWT.make(valid, secret: secret, algorithm: .hs512), "token_invalid"),
            ("no user", TestJWT.make(["iat": Int(now.timeIntervalSince1970), "exp": Int(now.timeIntervalSince1970) + 600], secret: secret), "token_invalid"),
            ("not a JWT", "not.a.jwt", "token_invalid"),
        ]
        for (label, token, code) in cases {
            let client = try CallTestClient.open(daemon, name: label)
            try client.send(["id": 1, "type": "auth", "token": token])
            let (frames, close) = try client.awaitCloseFrame()
            XCTAssertEqual(frames.count, 1, label)
            XCTAssertEqual(frames.first?["type"] as? String, "error", label)
            XCTAssertEqual(jsonInt(frames.first?["id"]), 1, label)
            XCTAssertEqual(jsonAt(frames.first, "error", "code") as? String, code, label)
            XCTAssertEqual(close.code, 4001, label)
            XCTAssertEqual(close.reason, code, "the close reason is the error code (\(label))")
        }

        // The same through the upgrade: the Authorization header and the token parameter.
        let forged = cases[0].token
        let expired = cases[2].token
        for (label, client, code) in [
            ("bearer header", try CallTestClient.open(daemon, headers: ["Authorization": "Bearer \(forged)"]), "token_invalid"),
            ("token parameter", try CallTestClient.open(daemon, query: "?token=\(expired)"), "token_expired"),
        ] {
            let (frames, close) = try client.awaitClose()
            XCTAssertEqual(frames.count, 1, label)
            XCTAssertNil(frames.first?["id"], label)
            XCTAssertEqual(jsonAt(frames.first, "error", "code") as? String, code, label)
            XCTAssertEqual(close, 4001, label)
        }

        XCTAssertEqual(counts(daemon), [0, 0, 0])
        XCTAssertEqual(try daemon.connectionList().count, 0)
        // Nothing reached the store either: a restart restores no connection.
        try daemon.restart()
        XCTAssertEqual(try daemon.connectionList().count, 0)
    }

    func test_aFirstFrameThatIsNotAValidAuthIsRefusedAsUnauthenticated() throws {
        let daemon = try TestDaemon.calls()
        let frames: [(label: String, text: String, id: Int?)] = [
            ("a request", #"{"id":7,"type":"call.get","data":{"type":"default","id":"m1"}}"#, 7),
            ("not JSON", "{auth", nil),
            ("auth without a token", #"{"id":8,"type":"auth"}"#, 8),
            ("a ping", #"{"id":9,"type":"ping"}"#, 9),
        ]
        for (label, text, id) in frames {
            let client = try CallTestClient.open(daemon, name: label)
            try client.sendText(text)
            let (received, close) = try client.awaitClose()
            XCTAssertEqual(received.count, 1, label)
            XCTAssertEqual(jsonInt(received.first?["id"]), id, label)
            XCTAssertEqual(jsonAt(received.first, "error", "code") as? String, "unauthenticated", label)
            XCTAssertEqual(close, 4001, label)
        }
        XCTAssertEqual(counts(daemon), [0, 0, 0])
        XCTAssertEqual(try daemon.connectionList().count, 0)
    }

    func test_aSocketThatDoesNotAuthenticateWithinTheAuthTimeoutIsClosedWith4001() throws {
        let daemon = try TestDaemon.calls(["connect.auth_timeout_ms": .int(300)], wallClock: ManualWallClock())
        let client = try CallTestClient.open(daemon)
        try waitUntil("the socket waits for its auth frame") { counts(daemon) == [0, 0, 1] }
        daemon.advance(by: .milliseconds(299))
        XCTAssertEqual(counts(daemon), [0, 0, 1], "refused before the auth timeout")
        daemon.advance(by: .milliseconds(2))
        let (frames, close) = try client.awaitClose()
        XCTAssertEqual(frames.count, 1)
        XCTAssertEqual(jsonAt(frames.first, "error", "code") as? String, "unauthenticated")
        XCTAssertEqual(close, 4001)
        XCTAssertEqual(counts(daemon), [0, 0, 0])
        // A client that does authenticate in time is served.
        XCTAssertEqual(try daemon.callClient("alice").userID, "alice")
    }

    func test_aConnectionIsWarnedBeforeItsTokenExpiresAndARefreshForTheSameUserKeepsItOpen() throws {
        let daemon = try TestDaemon.calls(["connect.token_expiring_ms": .int(2000)])
        let alice = try CallTestClient.connect(daemon, token: try daemon.mintToken(user: "alice", ttlSeconds: 4), name: "alice")
        let expiresAt = try XCTUnwrap(jsonInt(alice.ok["expires_at"]))
        XCTAssertGreaterThan(expiresAt, milliseconds() + 2000)
        try alice.request("call.join", ["type": "default", "id": "m1", "create": true])

        let warning = try alice.event("connection.token_expiring", timeout: .seconds(6))
        XCTAssertGreaterThanOrEqual(milliseconds(), expiresAt - 2000, "warned earlier than connect.token_expiring_ms")
        XCTAssertLessThan(milliseconds(), expiresAt)
        XCTAssertEqual(jsonInt(jsonAt(warning, "data", "expires_at")), expiresAt)
        XCTAssertNil(warning["call_cid"])

        // Another user's token, or a forged one, is refused and changes nothing.
        XCTAssertEqual(try alice.requestError("token.refresh", ["token": try daemon.mintToken(user: "mallory")]), "forbidden")
        XCTAssertEqual(
            try alice.requestError("token.refresh", ["token": TestJWT.make(TestJWT.claims(user: "alice", expiresAt: Date() + 600), secret: "x" + secret)]),
            "token_invalid")
        XCTAssertEqual(jsonInt(try daemon.connectionList().first?["token_expires_at"]), expiresAt)

        let refreshed = try alice.request("token.refresh", ["token": try daemon.mintToken(user: "alice", ttlSeconds: 600)])
        let newExpiry = try XCTUnwrap(jsonInt(refreshed["expires_at"]))
        XCTAssertGreaterThan(newExpiry, expiresAt + 590_000)
        XCTAssertEqual(jsonInt(try daemon.connectionList().first?["token_expires_at"]), newExpiry)

        // Past the first token's expiry the socket is still open and serving.
        try alice.expectSilence(until: Date(timeIntervalSince1970: Double(expiresAt) / 1000 + 0.5))
        XCTAssertEqual(alice.inbox.count, 0, "nothing arrives: no second warning, no token_expired")
        let state = try alice.request("call.get", ["type": "default", "id": "m1"])
        XCTAssertEqual(participantUsers(state), ["alice"])
        XCTAssertEqual(counts(daemon), [1, 1, 0])
    }

    func test_aSocketWhoseTokenExpiresWithoutARefreshGetsTokenExpiredAndCloses4001ButItsConnectionCanResume() throws {
        let daemon = try TestDaemon.calls(["connect.token_expiring_ms": .int(1000)])
        let bob = try CallTestClient.connect(daemon, token: try daemon.mintToken(user: "bob", ttlSeconds: 2), name: "bob")
        let expiresAt = try XCTUnwrap(jsonInt(bob.ok["expires_at"]))
        let session = try XCTUnwrap(try bob.request("call.join", ["type": "default", "id": "m1", "create": true])["session_id"] as? String)
        try bob.event("connection.token_expiring", timeout: .seconds(5))

        let (frames, close) = try bob.awaitClose(timeout: .seconds(5))
        XCTAssertGreaterThanOrEqual(milliseconds(), expiresAt, "closed before the token expired")
        XCTAssertEqual(frames.count, 1)
        XCTAssertEqual(frames.first?["type"] as? String, "error")
        XCTAssertNil(frames.first?["id"])
        XCTAssertEqual(jsonAt(frames.first, "error", "code") as? String, "token_expired")
        XCTAssertEqual(close, 4001)

        // The connection waits for a resume with a new token, its session kept.
        let connections = try daemon.connectionList()
        XCTAssertEqual(connections.map { $0["attached"] as? Bool }, [false])
        let back = try CallTestClient.connect(daemon, token: try daemon.mintToken(user: "bob"), name: "bob again", resume: (bob.resumeToken, bob.lastSeq))
        XCTAssertEqual(back.ok["resumed"] as? Bool, true)
        XCTAssertEqual(back.connectionID, bob.connectionID)
        XCTAssertEqual(back.sessions, [session])
        XCTAssertGreaterThan(jsonInt(back.ok["expires_at"]) ?? 0, expiresAt + 500_000)
    }
}
