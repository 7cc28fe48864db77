import Configuration
import Foundation
import SwitchboardTesting
import XCTest

/// Static files and the development token route on the client listener, through the real
/// libwebsockets transport: the request lines go out byte for byte as written here.
final class StaticFilesTests: XCTestCase {
    var top: URL!

    override func setUpWithError() throws {
        top = FileManager.default.temporaryDirectory.appendingPathComponent("static-it-\(UUID().uuidString)")
        let manager = FileManager.default
        for name in ["sdk", "demo", "assets"] {
            try manager.createDirectory(at: top.appendingPathComponent(name), withIntermediateDirectories: true)
        }
        try Data("export class SwitchboardClient {}\n".utf8).write(to: top.appendingPathComponent("sdk/switchboard.js"))
        try Data("<!doctype html><title>demo</title>".utf8).write(to: top.appendingPathComponent("demo/index.html"))
        try Data("body{}".utf8).write(to: top.appendingPathComponent("assets/site.css"))
        try Data("dot".utf8).write(to: top.appendingPathComponent("assets/.hidden"))
        try Data("top secret".utf8).write(to: top.appendingPathComponent("secret.txt"))
        try manager.createSymbolicLink(
            atPath: top.appendingPathComponent("assets/leak.txt").path, withDestinationPath: top.appendingPathComponent("secret.txt").path)
    }

    override func tearDownWithError() throws {
        try? FileManager.default.removeItem(at: top)
    }

    func daemon(_ extra: [String: ConfigContent] = [:]) throws -> TestDaemon {
        var values: [String: ConfigContent] = [
            "http.sdk_dir": .string(top.appendingPathComponent("sdk").path),
            "http.demo_dir": .string(top.appendingPathComponent("demo").path),
            "http.static": .stringArray(["/assets/=" + top.appendingPathComponent("assets").path]),
        ]
        values.merge(extra) { _, new in new }
        return try TestDaemon.calls(values)
    }

    func test_theSDKIsServedByDefaultAndTheDemoOnlyWhenOn() throws {
        let off = try daemon()
        let sdk = try off.http("GET", "/sdk/switchboard.js")
        XCTAssertEqual(sdk.status, 200)
        XCTAssertEqual(sdk.headers["content-type"], "text/javascript; charset=utf-8")
        XCTAssertEqual(sdk.text, "export class SwitchboardClient {}\n")
        XCTAssertEqual(sdk.headers["cache-control"], "no-cache")
        XCTAssertNotNil(sdk.headers["etag"])
        XCTAssertEqual(try off.http("GET", "/demo/").status, 404)
        // Without auth.dev_tokens the route does not exist: PeerJS's routes (mounted at /) answer.
        XCTAssertEqual(try off.http("GET", "/dev/token").status, 404)
        let minted = try off.http("POST", "/dev/token", body: Array(#"{"user_id":"a"}"#.utf8))
        XCTAssertNotEqual(minted.status, 201)
        XCTAssertFalse(minted.text.contains("token\""), minted.text)

        let on = try daemon(["http.demo": .bool(true)])
        let page = try on.http("GET", "/demo/")
        XCTAssertEqual(page.status, 200)
        XCTAssertEqual(page.headers["content-type"], "text/html; charset=utf-8")
        XCTAssertEqual(page.text, "<!doctype html><title>demo</title>")
        let redirect = try on.http("GET", "/demo")
        XCTAssertEqual(redirect.status, 301)
        XCTAssertEqual(redirect.headers["location"], "/demo/")
    }

    func test_conditionalHeadAndWrongMethods() throws {
        let daemon = try daemon()
        let first = try daemon.http("GET", "/assets/site.css")
        XCTAssertEqual(first.headers["content-type"], "text/css; charset=utf-8")
        let tag = try XCTUnwrap(first.headers["etag"])
        let again = try daemon.http("GET", "/assets/site.css", headers: ["If-None-Match": tag])
        XCTAssertEqual(again.status, 304)
        XCTAssertTrue(again.body.isEmpty)
        let head = try daemon.http("HEAD", "/assets/site.css")
        XCTAssertEqual(head.status, 200)
        XCTAssertEqual(head.headers["content-length"], "6")
        XCTAssertTrue(head.body.isEmpty)
        let post = try daemon.http("POST", "/assets/site.css", body: [1])
        XCTAssertEqual(post.status, 405)
        XCTAssertEqual(post.headers["allow"], "GET, HEAD")
    }

    func test_nothingOutsideTheDirectoryIsServed() throws {
        let daemon = try daemon()
        let attempts = [
            "/assets/../secret.txt", "/assets/%2e%2e/secret.txt", "/assets/%2E%2E%2Fsecret.txt", "/assets/..%2fsecret.txt",
            "/assets/%252e%252e/secret.txt", "/assets/leak.txt", "/assets/.%2e/secret.txt", "/sdk/../../secret.txt",
            "/assets/..\\secret.txt", "/assets/.hidden",
        ]
        var answered: [String: Int] = [:]
        for path in attempts {
            let response = try daemon.http("GET", path)
            XCTAssertFalse(response.text.contains("top secret"), "\(path) leaked the file")
            answered[path] = response.status
        }
        for (path, status) in answered {
            XCTAssertEqual(status, 404, path)
        }
        // A NUL inside the path: libwebsockets closes the connection without an answer.
        for path in ["/assets/site.css%00.png", "/assets/leak.txt%00", "/assets/%00/../../secret.txt"] {
            if let response = try? daemon.http("GET", path) {
                XCTAssertFalse(response.text.contains("top secret"), "\(path) leaked the file")
                XCTAssertNotEqual(response.status, 200, path)
            }
        }
        XCTAssertEqual(try daemon.http("GET", "/assets/leak.txt").status, 404)
    }

    func test_devTokensMintForLoopbackAndAuthenticateOnTheCallProtocol() throws {
        let daemon = try daemon(["auth.dev_tokens": .bool(true)])
        let response = try daemon.http("POST", "/dev/token", body: Array(#"{"user_id":"alice","ttl_seconds":120}"#.utf8))
        XCTAssertEqual(response.status, 201, response.text)
        XCTAssertEqual(response.headers["cache-control"], "no-store")
        let body = try XCTUnwrap(response.json as? [String: Any])
        XCTAssertEqual(body["user_id"] as? String, "alice")
        let token = try XCTUnwrap(body["token"] as? String)
        let client = try CallTestClient.connect(daemon, token: token)
        XCTAssertEqual((client.ok["user"] as? [String: Any])?["id"] as? String ?? client.ok["user_id"] as? String, "alice")
        XCTAssertEqual(try daemon.http("GET", "/dev/token").status, 405)
        XCTAssertEqual(try daemon.http("POST", "/dev/token", body: Array(#"{"user_id":""}"#.utf8)).status, 400)
    }

    func test_badStaticConfigurationNamesTheKey() throws {
        let cases: [([String: ConfigContent], String)] = [
            (["http.static": .stringArray(["assets"])], "http.static"),
            (["http.static": .stringArray(["/assets/=/nonexistent/dir"])], "http.static"),
            (["http.static": .stringArray(["/v1/=" + top.path])], "http.static"),
            (["http.static": .stringArray(["/=" + top.path])], "http.static"),
            (["http.static": .stringArray(["/sdk/=" + top.path])], "http.static"),
            (["http.demo": .bool(true), "http.demo_dir": .string("/nonexistent/demo")], "http.demo_dir"),
        ]
        for (values, key) in cases {
            XCTAssertThrowsError(try daemon(values), key) { error in
                XCTAssertTrue("\(error)".contains(key), "\(error)")
            }
        }
    }
}
