import Foundation
import SwitchboardCore
import SwitchboardSFU
import SwitchboardTesting
import XCTest

/// The Janus admin client against Janus 1.1.2's recorded answers.
final class JanusAdminClientTests: XCTestCase {
    private let url = "http://janus-a.test:7088/admin"
    private var http: ScriptedHTTPPoster!
    private var access: JanusAccess { JanusAccess(adminURL: url, adminSecret: .environment("JANUS_SECRET")) }

    override func setUp() { http = ScriptedHTTPPoster() }

    private func client(replaying name: String) throws -> JanusAdminClient {
        http.answer(url, json: try JanusFixtures.body(name))
        return JanusAdminClient(http: http, timeout: .seconds(1), transactionIDs: { JanusFixtures.transaction(name) })
    }

    func test_listSessionsCountsTheSessionsAndSendsTheSecretAndTransaction() async throws {
        let janus = try client(replaying: "admin_list_sessions")
        let count = try await janus.sessionCount(access, secret: "the-admin-secret")
        XCTAssertEqual(count, 1)
        let sent = try XCTUnwrap(http.requestObject(0))
        XCTAssertEqual(sent["janus"] as? String, "list_sessions")
        XCTAssertEqual(sent["admin_secret"] as? String, "the-admin-secret")
        XCTAssertEqual(sent["transaction"] as? String, "rec-admin_list_sessions")
        XCTAssertEqual(http.requests.first?.url, url)
    }

    func test_noSessionsIsLoadZero() async throws {
        let count = try await client(replaying: "admin_list_sessions_empty").sessionCount(access, secret: "s")
        XCTAssertEqual(count, 0)
    }

    func test_aWrongSecretIsRefusedWithJanusCode403() async throws {
        let janus = try client(replaying: "admin_wrong_secret")
        do {
            _ = try await janus.sessionCount(access, secret: "wrong")
            XCTFail("a wrong secret must not give a load")
        } catch {
            XCTAssertEqual(error, .refused(code: 403, reason: "Unauthorized request (wrong or missing secret/token)"))
        }
    }

    func test_anAnswerForAnotherTransactionIsNotTrusted() async throws {
        http.answer(url, json: try JanusFixtures.body("admin_list_sessions"))
        let janus = JanusAdminClient(http: http, timeout: .seconds(1), transactionIDs: { "mine" })
        do {
            _ = try await janus.sessionCount(access, secret: "s")
            XCTFail("a crossed answer must not count")
        } catch {
            XCTAssertEqual(error, .failed("the answer is for another transaction"))
        }
    }

    func test_transportFailuresHTTPErrorsAndGarbageAreFailuresNotLoads() async throws {
        let janus = JanusAdminClient(http: http, timeout: .seconds(1), transactionIDs: { "t" })
        let cases: [(ScriptedHTTPPoster.Answer, JanusError)] = [
            (.error(.timeout), .timeout),
            (.error(.failed("connection refused")), .failed("connection refused")),
            (.reply(status: 502, body: Array("bad gateway".utf8)), .failed("HTTP status 502")),
            (.reply(status: 200, body: Array("<html>".utf8)), .failed("the answer is not Janus JSON")),
            (.reply(status: 200, body: Array(#"{"janus":"success","transaction":"t"}"#.utf8)), .failed("the answer lacks the expected fields")),
            (.reply(status: 200, body: Array(#"{"janus":"ack","transaction":"t"}"#.utf8)), .failed("unexpected answer ack")),
        ]
        for (answer, expected) in cases {
            http.answer(url, with: answer)
            do {
                let load = try await janus.sessionCount(access, secret: "s")
                XCTFail("\(answer) gave load \(load)")
            } catch {
                XCTAssertEqual(error, expected)
            }
        }
    }
}
