import Foundation
import SwitchboardApp
import SwitchboardCore
import XCTest

/// The file adapter against a real directory tree with symbolic links in and out of it.
final class StaticFileServerTests: XCTestCase {
    var top: URL!
    var served: URL!
    var server: StaticFileServer!

    override func setUpWithError() throws {
        top = FileManager.default.temporaryDirectory.appendingPathComponent("static-\(UUID().uuidString)")
        served = top.appendingPathComponent("site")
        let manager = FileManager.default
        try manager.createDirectory(at: served.appendingPathComponent("sub"), withIntermediateDirectories: true)
        try Data("<h1>hi</h1>".utf8).write(to: served.appendingPathComponent("index.html"))
        try Data("export const x = 1;\n".utf8).write(to: served.appendingPathComponent("app.js"))
        try Data("nested".utf8).write(to: served.appendingPathComponent("sub/index.html"))
        try Data("hidden".utf8).write(to: served.appendingPathComponent(".env"))
        try Data("secret".utf8).write(to: top.appendingPathComponent("secret.txt"))
        try Data(repeating: 7, count: 2048).write(to: served.appendingPathComponent("big.bin"))
        // Links: one to a file outside the tree, one to a directory outside it, one inside.
        try manager.createSymbolicLink(atPath: served.appendingPathComponent("leak.txt").path, withDestinationPath: top.appendingPathComponent("secret.txt").path)
        try manager.createSymbolicLink(atPath: served.appendingPathComponent("up").path, withDestinationPath: top.path)
        try manager.createSymbolicLink(atPath: served.appendingPathComponent("alias.js").path, withDestinationPath: "app.js")
        server = StaticFileServer(mounts: [StaticMount(prefix: "/site/", directory: served.path)], maxFileBytes: 1024)
    }

    override func tearDownWithError() throws {
        try? FileManager.default.removeItem(at: top)
    }

    private func get(_ path: String, headers: [String: String] = [:], method: String = "GET") -> HTTPResponse? {
        server.respond(to: HTTPRequest(method: method, path: path, headers: headers))
    }

    func test_filesAreServedWithTheirTypeAndBytes() throws {
        let page = try XCTUnwrap(get("/site/"))
        XCTAssertEqual(page.status, 200)
        XCTAssertEqual(page.contentType, "text/html; charset=utf-8")
        XCTAssertEqual(String(decoding: page.body, as: UTF8.self), "<h1>hi</h1>")
        let script = try XCTUnwrap(get("/site/app.js"))
        XCTAssertEqual(script.contentType, "text/javascript; charset=utf-8")
        XCTAssertEqual(String(decoding: script.body, as: UTF8.self), "export const x = 1;\n")
        XCTAssertEqual(get("/site/sub/")?.body, Array("nested".utf8))
    }

    func test_aLinkInsideTheTreeIsServed() {
        XCTAssertEqual(get("/site/alias.js")?.status, 200)
        XCTAssertEqual(get("/site/alias.js")?.body, Array("export const x = 1;\n".utf8))
    }

    func test_linksOutOfTheTreeAreNotFound() {
        XCTAssertEqual(get("/site/leak.txt")?.status, 404)
        XCTAssertEqual(get("/site/up/secret.txt")?.status, 404)
        XCTAssertFalse(get("/site/up/secret.txt")?.body.isEmpty ?? true, "a JSON error body")
    }

    func test_traversalEncodedTraversalAndNULAreNotFound() {
        for path in ["/site/../secret.txt", "/site/sub/../../secret.txt", "/site/%2e%2e/secret.txt", "/site/app.js\u{0}", "/site/.env"] {
            XCTAssertEqual(get(path)?.status, 404, path)
            XCTAssertEqual(get(path)?.contentType, "application/json; charset=utf-8", path)
        }
    }

    func test_missingDirectoriesAndLargeFilesAreNotFound() {
        XCTAssertEqual(get("/site/nope.js")?.status, 404)
        XCTAssertEqual(get("/site/sub")?.status, 404, "a directory is no file")
        XCTAssertEqual(get("/site/big.bin")?.status, 404, "over maxFileBytes")
    }

    func test_theValidatorAnswersNotModified() throws {
        let first = try XCTUnwrap(get("/site/app.js"))
        let tag = try XCTUnwrap(first.header("ETag"))
        XCTAssertEqual(get("/site/app.js", headers: ["if-none-match": tag])?.status, 304)
        // A changed file has a new validator.
        try Data("export const x = 2;\n".utf8).write(to: served.appendingPathComponent("app.js"))
        try FileManager.default.setAttributes([.modificationDate: Date(timeIntervalSinceNow: 10)], ofItemAtPath: served.appendingPathComponent("app.js").path)
        XCTAssertEqual(get("/site/app.js", headers: ["if-none-match": tag])?.status, 200)
    }

    func test_redirectMethodAndUnmountedPaths() {
        XCTAssertEqual(get("/site")?.status, 301)
        XCTAssertEqual(get("/site")?.header("Location"), "/site/")
        XCTAssertEqual(get("/site/app.js", method: "POST")?.status, 405)
        XCTAssertNil(get("/other/app.js"))
        XCTAssertTrue(server.handles("/site/x"))
        XCTAssertFalse(server.handles("/peerjs"))
    }

    func test_aMountWhoseDirectoryIsMissingIsLeftOut() {
        let missing = StaticFileServer(mounts: [StaticMount(prefix: "/sdk/", directory: top.appendingPathComponent("nope").path)])
        XCTAssertTrue(missing.mounts.isEmpty)
        XCTAssertFalse(missing.handles("/sdk/switchboard.js"))
    }
}
