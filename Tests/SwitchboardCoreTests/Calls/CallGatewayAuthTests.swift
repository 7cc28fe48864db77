import Foundation
import SwitchboardCore
import XCTest

/// `/v1/connect` authentication, token refresh and expiry, timeouts, and frame errors.
final class CallGatewayAuthTests: XCTestCase {
    private let standup = #"{"type":"default","id":"standup","create":true}"#

    // MARK: Auth by first frame

    func test_theFirstFrameAuthenticatesThroughATokenCheck() throws {
        var h = GatewayHarness()
        let socket = h.openSocket()
        XCTAssertEqual(h.gateway.pendingCount, 1)
        XCTAssertTrue(h.last.commands.isEmpty)
        XCTAssertTrue(h.last.tokenChecks.isEmpty)

        h.send(socket, #"{"id":"a1","type":"auth","token":"signed-token"}"#)
        XCTAssertTrue(h.last.commands.isEmpty, "nothing is answered before the token is checked")
        XCTAssertEqual(h.last.tokenChecks.count, 1)
        let check = try XCTUnwrap(h.last.tokenChecks.first)
        XCTAssertEqual(check.socket, socket)
        XCTAssertEqual(check.token, "signed-token")
        XCTAssertEqual(check.purpose, .auth(id: .string("a1"), resume: nil))

        h.advance(0.25)
        h.answer(check, .success(h.token("alice", expiresIn: 3600)))
        XCTAssertEqual(
            h.last.frames(to: socket),
            [
                .object([
                    "id": .string("a1"), "type": .string("connection.ok"),
                    "data": .object([
                        "connection_id": .string("id-1"), "user_id": .string("alice"), "expires_at": .time(CallFixture.at(3600.25)),
                        "resume_token": .string("id2id3"), "resumed": .bool(false), "replayed": .number(0), "replay_complete": .bool(true),
                        "last_seq": .number(0), "sessions": .array([]),
                    ]),
                ])
            ])
        XCTAssertEqual(
            h.last.mutations,
            [
                .saveConnection(
                    ConnectionRecord(
                        id: ClientConnectionID("id-1"), userID: CallFixture.user("alice"), resumeToken: "id2id3", connectedAt: CallFixture.at(0.25),
                        tokenExpiresAt: CallFixture.at(3600.25)))
            ])
        XCTAssertEqual(h.last.responded.map { $0.id }, [.string("a1")])
        XCTAssertEqual(h.gateway.socketCount, 1)
        XCTAssertEqual(h.gateway.pendingCount, 0)
        XCTAssertEqual(h.gateway.clients[ClientConnectionID("id-1")]?.socket, socket)
        XCTAssertEqual(h.gateway.clients[ClientConnectionID("id-1")]?.remoteAddress, "198.51.100.1")
        XCTAssertTrue(h.last.closes(of: socket).isEmpty)
    }

    func test_aRefusedTokenGetsAnErrorFrameAndClose4001AndCreatesNothing() throws {
        for code in [SwitchboardError.Code.tokenInvalid, .tokenExpired] {
            var h = GatewayHarness()
            let socket = h.openSocket()
            h.send(socket, #"{"id":"a1","type":"auth","token":"forged"}"#)
            let check = try XCTUnwrap(h.last.tokenChecks.first)
            h.answer(check, .failure(SwitchboardError(code, "refused by the verifier")))

            let frames = h.last.frames(to: socket)
            XCTAssertEqual(frames.count, 1)
            XCTAssertEqual(frames.first?["id"], .string("a1"))
            XCTAssertEqual(frames.first?["type"], .string("error"))
            XCTAssertEqual(frames.first?.errorCode, code.rawValue)
            XCTAssertEqual(h.last.closes(of: socket).map { $0.code }, [.unauthenticated])
            XCTAssertEqual(h.last.closes(of: socket).map { $0.reason }, [code.rawValue])
            XCTAssertTrue(h.last.mutations.isEmpty)
            XCTAssertEqual(h.last.authFailures, [code.rawValue])
            XCTAssertEqual(h.gateway.pendingCount, 0)
            XCTAssertEqual(h.gateway.socketCount, 0)
            XCTAssertTrue(h.gateway.clients.isEmpty)
            XCTAssertEqual(h.ids.issued, 0)
        }
    }

    func test_aVerifiedTokenThatIsAlreadyExpiredOrHasABadUserIsRefused() throws {
        var h = GatewayHarness()
        let expired = h.openSocket()
        h.send(expired, #"{"id":"a1","type":"auth","token":"t"}"#)
        h.answer(try XCTUnwrap(h.last.tokenChecks.first), .success(h.token("alice", expiresIn: 0)))
        XCTAssertEqual(h.last.frames(to: expired).first?.errorCode, "token_expired")
        XCTAssertEqual(h.last.closes(of: expired).map { $0.code }, [.unauthenticated])

        let badUser = h.openSocket()
        h.send(badUser, #"{"id":"a2","type":"auth","token":"t"}"#)
        h.answer(try XCTUnwrap(h.last.tokenChecks.first), .success(h.token("", expiresIn: 60)))
        XCTAssertEqual(h.last.frames(to: badUser).first?.errorCode, "token_invalid")
        XCTAssertTrue(h.last.mutations.isEmpty)
        XCTAssertTrue(h.gateway.clients.isEmpty)
    }

    func test_aHeaderTokenIsCheckedAtOnceAndConnectionOkHasNoId() throws {
        var h = GatewayHarness()
        let socket = h.openSocket(token: "from-header")
        let check = try XCTUnwrap(h.last.tokenChecks.first)
        XCTAssertEqual(check.token, "from-header")
        XCTAssertEqual(check.purpose, .auth(id: .null, resume: nil))

        h.answer(check, .success(h.token("alice")))
        let ok = try XCTUnwrap(h.last.frames(to: socket).first)
        XCTAssertEqual(ok["type"], .string("connection.ok"))
        XCTAssertNil(ok["id"])
        XCTAssertEqual(ok["data"]?["user_id"], .string("alice"))
    }

    func test_aFirstFrameThatIsNotAuthIsUnauthenticatedAndClosed() {
        let firstFrames = [
            (#"{"id":"j1","type":"call.join","data":{"type":"default","id":"x"}}"#, JSONValue.string("j1")),
            (#"{"id":2,"type":"ping"}"#, .number(2)),
            ("not json", .null),
            (#"{"id":"a","type":"auth"}"#, .string("a")),
        ]
        for (text, id) in firstFrames {
            var h = GatewayHarness()
            let socket = h.openSocket()
            h.send(socket, text)
            let frames = h.last.frames(to: socket)
            XCTAssertEqual(frames.count, 1, text)
            XCTAssertEqual(frames.first?.errorCode, "unauthenticated", text)
            XCTAssertEqual(frames.first?["id"] ?? .null, id, text)
            XCTAssertEqual(h.last.closes(of: socket).map { $0.code }, [.unauthenticated], text)
            XCTAssertTrue(h.last.tokenChecks.isEmpty, text)
            XCTAssertTrue(h.last.mutations.isEmpty, text)
            XCTAssertEqual(h.gateway.pendingCount, 0, text)
        }
    }

    func test_aSocketThatDoesNotAuthenticateInTimeIsClosed() throws {
        var h = GatewayHarness()
        let silent = h.openSocket()
        let verifying = h.openSocket()
        h.send(verifying, #"{"type":"auth","token":"slow"}"#)
        let check = try XCTUnwrap(h.last.tokenChecks.first)

        h.advance(4.5)
        h.tick()
        XCTAssertTrue(h.last.commands.isEmpty)
        h.advance(0.5)
        h.tick()
        XCTAssertEqual(h.last.frames(to: silent).map(\.errorCode), ["unauthenticated"])
        XCTAssertNil(h.last.frames(to: silent).first?["id"])
        XCTAssertEqual(h.last.closes(of: silent).map { $0.code }, [.unauthenticated])
        XCTAssertTrue(h.last.closes(of: verifying).isEmpty, "a socket whose token is being checked is not timed out")
        XCTAssertEqual(h.gateway.pendingCount, 1)

        h.answer(check, .success(h.token("alice")))
        XCTAssertEqual(h.last.frames(to: verifying).first?["type"], .string("connection.ok"))
    }

    func test_aTokenCheckThatReturnsAfterTheSocketClosedIsIgnored() throws {
        var h = GatewayHarness()
        let socket = h.openSocket()
        h.send(socket, #"{"type":"auth","token":"t"}"#)
        let check = try XCTUnwrap(h.last.tokenChecks.first)
        h.closeSocket(socket)
        h.answer(check, .success(h.token("alice")))
        XCTAssertTrue(h.last.commands.isEmpty)
        XCTAssertTrue(h.last.mutations.isEmpty)
        XCTAssertTrue(h.gateway.clients.isEmpty)
    }

    // MARK: Idle

    func test_pingAnswersPongAndKeepsTheSocketAliveUntilTheIdleTimeout() throws {
        var h = GatewayHarness()
        let alice = try XCTUnwrap(h.connect("alice"))
        h.advance(30)
        h.send(alice.socket, #"{"id":"p1","type":"ping"}"#)
        XCTAssertEqual(h.last.frames(to: alice.socket), [.object(["id": .string("p1"), "type": .string("pong")])])

        h.advance(59.5)
        h.tick()
        XCTAssertTrue(h.last.commands.isEmpty)
        h.advance(0.5)
        h.tick()
        XCTAssertEqual(h.last.closes(of: alice.socket).map { $0.code }, [.idleTimeout])
        XCTAssertEqual(h.last.closes(of: alice.socket).first?.code.rawValue, 4003)
        XCTAssertEqual(h.gateway.socketCount, 0)
        let client = try XCTUnwrap(h.gateway.clients[alice.connection])
        XCTAssertNil(client.socket)
        XCTAssertEqual(client.detachedAt, CallFixture.at(90))
    }

    // MARK: Token refresh and expiry

    func test_tokenRefreshForTheSameUserSwapsTheTokenInPlace() throws {
        var h = GatewayHarness()
        let alice = try XCTUnwrap(h.connect("alice"))
        h.advance(100)
        XCTAssertNil(h.request(alice.socket, "r1", "token.refresh", #"{"token":"fresh"}"#), "answered after the check")
        let check = try XCTUnwrap(h.last.tokenChecks.first)
        XCTAssertEqual(check.socket, alice.socket)
        XCTAssertEqual(check.token, "fresh")
        XCTAssertEqual(check.purpose, .refresh(id: .string("r1")))

        h.answer(check, .success(h.token("alice", expiresIn: 7200)))
        XCTAssertEqual(
            h.last.frames(to: alice.socket),
            [.object(["id": .string("r1"), "type": .string("response"), "data": .object(["expires_at": .time(CallFixture.at(7300))])])])
        XCTAssertEqual(h.gateway.clients[alice.connection]?.token.expiresAt, CallFixture.at(7300))
        guard case .saveConnection(let record)? = h.last.mutations.first else { return XCTFail("\(h.last.mutations)") }
        XCTAssertEqual(record.tokenExpiresAt, CallFixture.at(7300))
        XCTAssertEqual(record.id, alice.connection)
        XCTAssertEqual(h.last.mutations.count, 1)
    }

    func test_tokenRefreshForAnotherUserIsForbiddenAndAFailedCheckIsReported() throws {
        var h = GatewayHarness()
        let alice = try XCTUnwrap(h.connect("alice"))
        h.request(alice.socket, "r2", "token.refresh", #"{"token":"bobs"}"#)
        h.answer(try XCTUnwrap(h.last.tokenChecks.first), .success(h.token("bob", expiresIn: 7200)))
        XCTAssertEqual(h.last.frames(to: alice.socket).first?["id"], .string("r2"))
        XCTAssertEqual(h.last.frames(to: alice.socket).first?.errorCode, "forbidden")
        XCTAssertTrue(h.last.mutations.isEmpty)
        XCTAssertEqual(h.gateway.clients[alice.connection]?.token.userID, "alice")
        XCTAssertEqual(h.gateway.clients[alice.connection]?.token.expiresAt, CallFixture.at(3600))

        h.request(alice.socket, "r3", "token.refresh", #"{"token":"stale"}"#)
        h.answer(try XCTUnwrap(h.last.tokenChecks.first), .failure(SwitchboardError(.tokenExpired, "expired")))
        XCTAssertEqual(h.last.frames(to: alice.socket).first?.errorCode, "token_expired")
        XCTAssertEqual(h.last.frames(to: alice.socket).first?["id"], .string("r3"))
        XCTAssertEqual(h.last.authFailures, ["token_expired"])
        XCTAssertTrue(h.last.closes(of: alice.socket).isEmpty)
    }

    func test_tokenExpiringIsSentOnceAheadAndExpiryClosesWith4001() throws {
        var h = GatewayHarness(CallConfiguration(idleTimeout: .seconds(3600)))
        let alice = try XCTUnwrap(h.connect("alice", token: h.token("alice", expiresIn: 300)))
        h.advance(239)
        h.tick()
        XCTAssertTrue(h.last.commands.isEmpty)

        h.advance(1)
        h.tick()
        XCTAssertEqual(
            h.last.frames(to: alice.socket),
            [.object(["type": .string("connection.token_expiring"), "seq": .number(1), "data": .object(["expires_at": .time(CallFixture.at(300))])])])
        h.advance(10)
        h.tick()
        XCTAssertTrue(h.last.commands.isEmpty, "sent once")
        h.advance(49)
        h.tick()
        XCTAssertTrue(h.last.commands.isEmpty)

        h.advance(1)
        h.tick()
        let frames = h.last.frames(to: alice.socket)
        XCTAssertEqual(frames.count, 1)
        XCTAssertEqual(frames.first?.errorCode, "token_expired")
        XCTAssertNil(frames.first?["id"])
        XCTAssertEqual(h.last.closes(of: alice.socket).map { $0.code }, [.unauthenticated])
        XCTAssertEqual(h.last.closes(of: alice.socket).map { $0.reason }, ["token_expired"])
        XCTAssertNil(h.gateway.clients[alice.connection]?.socket)
        XCTAssertEqual(h.gateway.clients[alice.connection]?.detachedAt, CallFixture.at(300))
        XCTAssertEqual(h.gateway.socketCount, 0)
    }

    func test_aRefreshedTokenGetsItsOwnExpiringWarning() throws {
        var h = GatewayHarness(CallConfiguration(idleTimeout: .seconds(3600)))
        let alice = try XCTUnwrap(h.connect("alice", token: h.token("alice", expiresIn: 300)))
        h.advance(250)
        h.tick()
        XCTAssertEqual(h.last.eventTypes(to: alice.socket), ["connection.token_expiring"])
        h.request(alice.socket, "r1", "token.refresh", #"{"token":"fresh"}"#)
        h.answer(try XCTUnwrap(h.last.tokenChecks.first), .success(h.token("alice", expiresIn: 600)))

        h.advance(50)
        h.tick()
        XCTAssertTrue(h.last.commands.isEmpty, "the old expiry no longer applies")
        h.advance(490)
        h.tick()
        XCTAssertEqual(h.last.eventTypes(to: alice.socket), ["connection.token_expiring"])
        XCTAssertEqual(h.last.seqs(to: alice.socket), [2])
    }

    // MARK: Requests on an authenticated socket

    func test_aSecondAuthIsAnInvalidRequest() throws {
        var h = GatewayHarness()
        let alice = try XCTUnwrap(h.connect("alice"))
        h.send(alice.socket, #"{"id":"again","type":"auth","token":"t"}"#)
        XCTAssertEqual(h.last.frames(to: alice.socket).first?.errorCode, "invalid_request")
        XCTAssertEqual(h.last.frames(to: alice.socket).first?["id"], .string("again"))
        XCTAssertTrue(h.last.tokenChecks.isEmpty)
    }

    func test_aTokenLimitedToSomeCallsMayNotTouchOthers() throws {
        var h = GatewayHarness()
        let alice = try XCTUnwrap(h.connect("alice", token: h.token("alice", cids: ["default:allowed"])))
        let refused = h.request(alice.socket, "j1", "call.join", standup)
        XCTAssertEqual(refused?.errorCode, "forbidden")
        XCTAssertTrue(h.last.mutations.isEmpty)
        XCTAssertNil(h.gateway.engine.call(CallFixture.cid("default", "standup")))
        let joined = h.request(alice.socket, "j2", "call.join", #"{"type":"default","id":"allowed","create":true}"#)
        XCTAssertEqual(joined?["type"], .string("response"))
    }

    func test_frameErrorsAreAnsweredWithTheRequestIdAndKeepTheSocket() throws {
        var h = GatewayHarness(CallConfiguration(maxCustomBytes: 64))
        let alice = try XCTUnwrap(h.connect("alice"))
        let big = String(repeating: "z", count: 80)
        let cases: [(String, String, JSONValue)] = [
            ("not json", "invalid_request", .null),
            (#"{"id":"x1","data":{}}"#, "invalid_request", .string("x1")),
            (#"{"id":"x2","type":"call.teleport","data":{}}"#, "unknown_type", .string("x2")),
            (#"{"id":"x3","type":"call.join","data":{"type":"default","id":"bad id"}}"#, "invalid_request", .string("x3")),
            (#"{"id":"x4","type":"call.get_or_create","data":{"type":"default","id":"m","custom":{"t":"\#(big)"}}}"#, "payload_too_large", .string("x4")),
            (#"{"id":5,"type":"call.get","data":{"type":"default","id":"missing"}}"#, "call_not_found", .number(5)),
        ]
        for (text, code, id) in cases {
            h.send(alice.socket, text)
            let frames = h.last.frames(to: alice.socket)
            XCTAssertEqual(frames.count, 1, text)
            XCTAssertEqual(frames.first?["type"], .string("error"), text)
            XCTAssertEqual(frames.first?.errorCode, code, text)
            XCTAssertEqual(frames.first?["id"] ?? .null, id, text)
            XCTAssertEqual(h.last.responded.map { $0.id }, [id], text)
            XCTAssertTrue(h.last.closes(of: alice.socket).isEmpty, text)
            XCTAssertTrue(h.last.mutations.isEmpty, text)
        }
        XCTAssertEqual(h.gateway.socketCount, 1)
    }

    func test_aSuccessfulRequestIsAnsweredWithItsIdAndResult() throws {
        var h = GatewayHarness()
        let alice = try XCTUnwrap(h.connect("alice"))
        let response = try XCTUnwrap(h.request(alice.socket, "j1", "call.join", standup))
        XCTAssertEqual(response["type"], .string("response"))
        XCTAssertEqual(response["data"]?["session_id"], .string("id-4"))
        XCTAssertEqual(response["data"]?["role"], .string("initiator"))
        XCTAssertEqual(response["data"]?["sfu"]?["id"], .string("sfu-fra-1"))
        XCTAssertEqual(h.placer.requests.first?.participants.first?.ip, "198.51.100.1", "the join's location carries the socket's address")
        XCTAssertEqual(h.last.responded.map { $0.id }, [.string("j1")])
        XCTAssertFalse(h.last.mutations.isEmpty)
    }

    // MARK: Pending rings

    func test_aMemberWhoConnectsWhileBeingRungGetsCallRingAfterConnectionOk() throws {
        var h = GatewayHarness()
        let alice = try XCTUnwrap(h.connect("alice"))
        h.request(alice.socket, "g1", "call.get_or_create", #"{"type":"ringing","id":"c1","members":["bob"],"ring":true}"#)
        XCTAssertEqual(h.last.eventTypes(to: alice.socket), [])

        h.advance(3)
        let bob = try XCTUnwrap(h.connect("bob"))
        let frames = h.last.frames(to: bob.socket)
        XCTAssertEqual(frames.map { $0["type"]?.stringValue }, ["connection.ok", "call.ring"])
        let ring = frames[1]
        XCTAssertEqual(ring["seq"], .number(1))
        XCTAssertEqual(ring["call_cid"], .string("ringing:c1"))
        XCTAssertEqual(ring["data"]?["from"], .string("alice"))
        XCTAssertEqual(ring["data"]?["ring_deadline"], .time(CallFixture.at(30)))

        h.request(bob.socket, "a1", "call.accept", #"{"type":"ringing","id":"c1"}"#)
        let bobTablet = try XCTUnwrap(h.connect("bob"))
        XCTAssertEqual(h.last.eventTypes(to: bobTablet.socket), [], "an answered ring is not sent again")
    }
}
