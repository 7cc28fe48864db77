import SwitchboardCore
import XCTest

final class StaticMountTests: XCTestCase {
    let mount = StaticMount(prefix: "/demo/", directory: "clients/demo")

    func test_aPathUnderThePrefixNamesItsSegments() {
        XCTAssertEqual(mount.target(for: "/demo/app.js"), .file(["app.js"]))
        XCTAssertEqual(mount.target(for: "/demo/img/logo.svg"), .file(["img", "logo.svg"]))
    }

    func test_aDirectoryPathNamesItsIndex() {
        XCTAssertEqual(mount.target(for: "/demo/"), .file(["index.html"]))
        XCTAssertEqual(mount.target(for: "/demo/img/"), .file(["img", "index.html"]))
    }

    func test_thePrefixWithoutItsSlashRedirects() {
        XCTAssertEqual(mount.target(for: "/demo"), .redirect("/demo/"))
    }

    func test_otherPathsAreNotThisMounts() {
        XCTAssertNil(mount.target(for: "/demos/app.js"))
        XCTAssertNil(mount.target(for: "/sdk/switchboard.js"))
        XCTAssertNil(mount.target(for: "/"))
    }

    func test_traversalAndHiddenNamesAreRefused() {
        for path in [
            "/demo/../secret", "/demo/a/../../secret", "/demo/./app.js", "/demo/.git/config", "/demo/.env",
            "/demo//app.js", "/demo/a\\..\\b", "/demo/app.js\u{0}.png", "/demo/x\u{1}y", "/demo/..",
        ] {
            XCTAssertEqual(mount.target(for: path), .refused, path)
        }
    }

    func test_percentSequencesAreLiteralNamesNeverDecodedAgain() {
        // The transport decoded the URL once: "%2e%2e" arrived as "%252e%252e" and stays a name.
        XCTAssertEqual(mount.target(for: "/demo/%2e%2e/secret"), .file(["%2e%2e", "secret"]))
    }

    func test_aConfigEntryIsPrefixEqualsDirectory() {
        XCTAssertEqual(StaticMount(entry: "/assets/=/srv/assets"), StaticMount(prefix: "/assets/", directory: "/srv/assets"))
        XCTAssertEqual(StaticMount(entry: "/assets=/srv/a=b")?.prefix, "/assets/")
        XCTAssertEqual(StaticMount(entry: "/assets=/srv/a=b")?.directory, "/srv/a=b")
        for bad in ["/assets/", "assets/=/srv", "/assets/=", "/../x/=/srv", "/a\u{0}/=/srv"] {
            XCTAssertNil(StaticMount(entry: bad), bad)
        }
    }

    func test_coversItsPrefixAndThePrefixWithoutSlash() {
        XCTAssertTrue(mount.covers("/demo/x"))
        XCTAssertTrue(mount.covers("/demo"))
        XCTAssertFalse(mount.covers("/demox"))
    }
}

final class StaticContentTests: XCTestCase {
    func test_mediaTypesByExtension() {
        XCTAssertEqual(StaticContent.mediaType(of: "index.html"), "text/html; charset=utf-8")
        XCTAssertEqual(StaticContent.mediaType(of: "switchboard.js"), "text/javascript; charset=utf-8")
        XCTAssertEqual(StaticContent.mediaType(of: "STYLE.CSS"), "text/css; charset=utf-8")
        XCTAssertEqual(StaticContent.mediaType(of: "logo.svg"), "image/svg+xml")
        XCTAssertEqual(StaticContent.mediaType(of: "switchboard.d.ts"), "text/plain; charset=utf-8")
        XCTAssertEqual(StaticContent.mediaType(of: "README"), "application/octet-stream")
        XCTAssertEqual(StaticContent.mediaType(of: ".bashrc"), "application/octet-stream")
        XCTAssertEqual(StaticContent.mediaType(of: "data.bin"), "application/octet-stream")
    }

    func test_aFileIsServedWithItsValidatorAndNoCache() {
        let tag = StaticContent.entityTag(size: 3, modifiedNanoseconds: 255)
        XCTAssertEqual(tag, "\"3-ff\"")
        let response = StaticContent.response(to: HTTPRequest(method: "GET", path: "/demo/app.js"), fileName: "app.js", body: Array("abc".utf8), tag: tag)
        XCTAssertEqual(response.status, 200)
        XCTAssertEqual(response.contentType, "text/javascript; charset=utf-8")
        XCTAssertEqual(response.header("ETag"), tag)
        XCTAssertEqual(response.header("Cache-Control"), "no-cache")
        XCTAssertEqual(response.header("X-Content-Type-Options"), "nosniff")
        XCTAssertEqual(response.body, Array("abc".utf8))
    }

    func test_aKnownVersionIsNotModified() {
        let tag = StaticContent.entityTag(size: 3, modifiedNanoseconds: 255)
        for header in [tag, "\"x\", \(tag)", "W/\(tag)", "*"] {
            let request = HTTPRequest(method: "GET", path: "/a.js", headers: ["if-none-match": header])
            let response = StaticContent.response(to: request, fileName: "a.js", body: [1, 2, 3], tag: tag)
            XCTAssertEqual(response.status, 304, header)
            XCTAssertEqual(response.body, [], header)
            XCTAssertEqual(response.header("ETag"), tag)
        }
        let stale = HTTPRequest(method: "GET", path: "/a.js", headers: ["if-none-match": "\"3-fe\""])
        XCTAssertEqual(StaticContent.response(to: stale, fileName: "a.js", body: [1, 2, 3], tag: tag).status, 200)
    }

    func test_onlyGetAndHeadAreServed() {
        XCTAssertNil(StaticContent.methodNotAllowed(HTTPRequest(method: "GET", path: "/")))
        XCTAssertNil(StaticContent.methodNotAllowed(HTTPRequest(method: "HEAD", path: "/")))
        let refused = StaticContent.methodNotAllowed(HTTPRequest(method: "POST", path: "/"))
        XCTAssertEqual(refused?.status, 405)
        XCTAssertEqual(refused?.header("Allow"), "GET, HEAD")
    }
}
