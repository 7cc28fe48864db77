import Foundation
import SwitchboardCore
import SwitchboardSFU
import SwitchboardTesting
import XCTest

/// VideoRoom and token requests against Janus 1.1.2's recorded answers: what each request sends,
/// which errors mean "already so", and which are refusals.
final class JanusAdminClientRoomTests: XCTestCase {
    private let url = "http://janus-a.test:7088/admin"
    private var http: ScriptedHTTPPoster!
    private let access = JanusAccess(adminURL: "http://janus-a.test:7088/admin", adminSecret: .environment("S"))

    override func setUp() { http = ScriptedHTTPPoster() }

    private func client(replaying name: String) throws -> JanusAdminClient {
        http.answer(url, json: try JanusFixtures.body(name))
        return JanusAdminClient(http: http, timeout: .seconds(1), transactionIDs: { JanusFixtures.transaction(name) })
    }

    private func refusal(_ body: () async throws(JanusError) -> Void) async -> JanusError? {
        do {
            try await body()
            return nil
        } catch {
            return error
        }
    }

    func test_createSendsTheRoomsSecretPINSizeAndAllowedListAndAnExistingRoomCountsAsCreated() async throws {
        for fixture in ["videoroom_create_ok", "videoroom_create_exists"] {
            let janus = try client(replaying: fixture)
            try await janus.createRoom(
                access, secret: "admin", room: 4242, roomSecret: "room-secret", pin: "1234", publishers: 4, allowed: ["sb1.a"],
                description: "switchboard default:x")
        }
        let sent = try XCTUnwrap(http.requestObject(0))
        XCTAssertEqual(sent["janus"] as? String, "message_plugin")
        XCTAssertEqual(sent["plugin"] as? String, "janus.plugin.videoroom")
        let request = try XCTUnwrap(sent["request"] as? [String: Any])
        XCTAssertEqual(request["request"] as? String, "create")
        XCTAssertEqual(request["room"] as? Int, 4242)
        XCTAssertEqual(request["secret"] as? String, "room-secret")
        XCTAssertEqual(request["pin"] as? String, "1234")
        XCTAssertEqual(request["publishers"] as? Int, 4)
        XCTAssertEqual(request["allowed"] as? [String], ["sb1.a"])
        XCTAssertEqual(request["is_private"] as? Bool, false, "a private room would be missing from list, and never reconciled")
        XCTAssertEqual(request["permanent"] as? Bool, false)
    }

    func test_destroyingAGoneRoomIsDoneButAWrongSecretIsARefusal() async throws {
        try await client(replaying: "videoroom_destroy_ok").destroyRoom(access, secret: "a", room: 4242, roomSecret: "s")
        try await client(replaying: "videoroom_destroy_no_such_room").destroyRoom(access, secret: "a", room: 4242, roomSecret: "s")
        let janus = try client(replaying: "videoroom_destroy_wrong_secret")
        let error = await refusal { () async throws(JanusError) in try await janus.destroyRoom(access, secret: "a", room: 4242, roomSecret: "wrong") }
        XCTAssertEqual(error, .refused(code: 433, reason: "Unauthorized (wrong secret)"))
    }

    func test_allowedChangesAnswerTheWholeListAndListsAreRead() async throws {
        let added = try await client(replaying: "videoroom_allowed_add").changeAllowed(access, secret: "a", room: 4242, roomSecret: "s", add: true, tokens: ["tok-c"])
        XCTAssertEqual(added, ["tok-a", "tok-c"])
        XCTAssertEqual((http.requestObject(0)?["request"] as? [String: Any])?["action"] as? String, "add")
        let removed = try await client(replaying: "videoroom_allowed_remove").changeAllowed(access, secret: "a", room: 4242, roomSecret: "s", add: false, tokens: ["tok-c"])
        XCTAssertEqual(removed, ["tok-a"])
        let rooms = try await client(replaying: "videoroom_list").listRooms(access, secret: "a")
        XCTAssertEqual(rooms, [JanusRoomListingFixture.room4242])
        let tokens = try await client(replaying: "admin_list_tokens").listTokens(access, secret: "a")
        XCTAssertEqual(tokens, ["tok-a", "tok-b"])
    }

    func test_tokensAreAddedForTheVideoRoomOnlyAndAnUnknownTokenCountsAsRemoved() async throws {
        try await client(replaying: "admin_add_token").addToken(access, secret: "a", token: "sb1.x")
        XCTAssertEqual(http.requestObject(0)?["plugins"] as? [String], ["janus.plugin.videoroom"])
        try await client(replaying: "admin_remove_token").removeToken(access, secret: "a", token: "sb1.x")
        try await client(replaying: "admin_remove_token_unknown").removeToken(access, secret: "a", token: "sb1.gone")
    }

    func test_aWrongAdminSecretRefusesPluginRequestsToo() async throws {
        let janus = try client(replaying: "admin_message_plugin_wrong_secret")
        let error = await refusal { () async throws(JanusError) in _ = try await janus.listRooms(access, secret: "wrong") }
        XCTAssertEqual(error, .refused(code: 403, reason: "Unauthorized request (wrong or missing secret/token)"))
    }

    func test_theSessionUsingARevokedTokenIsFoundThroughItsHandles() async throws {
        http.answer(url, json: try JanusFixtures.body("admin_list_sessions").replacingOccurrences(of: "5410228696652460", with: "6479330337708167"))
        http.answer(url + "/6479330337708167", json: try JanusFixtures.body("admin_list_handles"))
        http.answer(url + "/6479330337708167/7949017162499391", json: try JanusFixtures.body("admin_handle_info"))
        let janus = JanusAdminClient(http: http, timeout: .seconds(1), transactionIDs: { "t" })
        // The recorded answers carry their own transactions; an answer for another transaction is refused.
        let crossed = await refusal { () async throws(JanusError) in _ = try await janus.sessions(using: ["tok-a"], access, secret: "a") }
        XCTAssertEqual(crossed, .failed("the answer is for another transaction"))
        let replaying = JanusAdminClient(http: SameTransaction(http), timeout: .seconds(1), transactionIDs: { "t" })
        let found = try await replaying.sessions(using: ["tok-a"], access, secret: "a")
        XCTAssertEqual(found, [6479330337708167])
        let none = try await replaying.sessions(using: ["tok-other"], access, secret: "a")
        XCTAssertEqual(none, [])
    }
}

enum JanusRoomListingFixture {
    static var room4242: JanusRoomListing {
        let json = #"{"room":4242,"description":"switchboard call 4242","num_participants":1}"#
        return try! JSONDecoder().decode(JanusRoomListing.self, from: Data(json.utf8))
    }
}

/// Rewrites the recorded answers' transaction to the one each request sent.
private struct SameTransaction: HTTPPoster {
    let inner: ScriptedHTTPPoster
    init(_ inner: ScriptedHTTPPoster) { self.inner = inner }

    func post(_ url: String, body: [UInt8], timeout: Duration) async throws(HTTPPostError) -> (status: Int, body: [UInt8]) {
        let answer = try await inner.post(url, body: body, timeout: timeout)
        guard var object = (try? JSONSerialization.jsonObject(with: Data(answer.body))) as? [String: Any],
            let sent = (try? JSONSerialization.jsonObject(with: Data(body))) as? [String: Any]
        else { return answer }
        object["transaction"] = sent["transaction"]
        return (answer.status, Array((try? JSONSerialization.data(withJSONObject: object)) ?? Data()))
    }
}
