import Foundation
import Logging
import PostgresNIO
import SwitchboardPostgres
import XCTest

/// A private PostgreSQL server for the store's tests (Debian's `postgresql` package, which
/// `scripts/test` installs): `initdb` into a temporary folder and `postgres` on 127.0.0.1 at a
/// port the kernel reported free, its socket in that folder. It never touches a packaged
/// cluster. PostgreSQL refuses to run as root: under root both run as the `postgres` user
/// (`setpriv`, which execs in place, so the PID is the server's). Started once per test process
/// at first use, ended by PID when the test bundle finishes. Each test gets a database of its
/// own (``database()``). No fixed waits: readiness is polled with a deadline.
final class PostgresTestServer: @unchecked Sendable {
    static let shared: Result<PostgresTestServer, any Error> = Result { try PostgresTestServer() }

    let directory: URL
    let port: Int
    /// The root the server's certificate chains to (it names `localhost` and `127.0.0.1`), and
    /// another root it does not chain to.
    let certificateAuthority: URL
    let otherCertificateAuthority: URL
    let user = "switchboard"
    private let process: Process
    private let exited = DispatchGroup()
    private let lock = NSLock()
    private var databases = 0

    /// The server of this test process; a test fails (not skips) with the reason when there is none.
    static func running() throws -> PostgresTestServer {
        try shared.get()
    }

    private init() throws {
        let bin = try Self.binaries()
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("switchboard-pg-\(UUID().uuidString)", isDirectory: true)
        let data = directory.appendingPathComponent("data"), sockets = directory.appendingPathComponent("sock")
        for folder in [directory, sockets] { try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true) }
        let prefix = try Self.unprivilegedPrefix(owning: [directory, sockets])
        let initdb = try Self.run(prefix + [bin.appendingPathComponent("initdb").path, "-D", data.path, "--auth=trust", "-U", user,
            "--encoding=UTF8", "--no-locale", "--no-sync"])
        guard initdb.status == 0 else { throw Failure("initdb failed (\(initdb.status)): \(initdb.output)") }
        let tls = directory.appendingPathComponent("tls")
        try Self.makeCertificates(in: tls)
        certificateAuthority = tls.appendingPathComponent("ca.pem")
        otherCertificateAuthority = tls.appendingPathComponent("other-ca.pem")
        _ = try Self.unprivilegedPrefix(owning: [tls, tls.appendingPathComponent("server.pem"), tls.appendingPathComponent("server.key")])
        port = try Self.freePort()
        process = Process()
        process.executableURL = URL(fileURLWithPath: prefix.first ?? bin.appendingPathComponent("postgres").path)
        process.arguments = Array(prefix.dropFirst()) + (prefix.isEmpty ? [] : [bin.appendingPathComponent("postgres").path]) + [
            "-D", data.path, "-p", "\(port)", "-k", sockets.path, "-c", "listen_addresses=127.0.0.1",
            // Contract tests never crash the server: speed over durability here.
            "-c", "fsync=off", "-c", "synchronous_commit=off", "-c", "full_page_writes=off",
            // TLS offered (sslmode tests); connections that do not ask for it stay plain.
            "-c", "ssl=on", "-c", "ssl_cert_file=\(tls.appendingPathComponent("server.pem").path)",
            "-c", "ssl_key_file=\(tls.appendingPathComponent("server.key").path)",
        ]
        let log = directory.appendingPathComponent("postgres.log")
        FileManager.default.createFile(atPath: log.path, contents: nil)
        let handle = try FileHandle(forWritingTo: log)
        process.standardOutput = handle
        process.standardError = handle
        exited.enter()
        process.terminationHandler = { [exited] _ in exited.leave() }
        try process.run()
        try waitUntilReady(log: log)
        let stop = StopAtExit(server: self)
        XCTestObservationCenter.shared.addTestObserver(stop)
    }

    /// A new empty database; its configuration for ``PostgresStore``.
    func database() throws -> PostgresStore.Configuration {
        let name = lock.withLock {
            databases += 1
            return "t\(databases)_\(UUID().uuidString.prefix(8).lowercased())"
        }
        let admin = try connect(database: "postgres")
        defer { try? admin.close().wait() }
        _ = try admin.query(PostgresQuery(unsafeSQL: "CREATE DATABASE \"\(name)\""), logger: Self.logger).wait()
        return PostgresStore.Configuration(host: "127.0.0.1", port: port, username: user, database: name)
    }

    func connect(database: String) throws -> PostgresConnection {
        let configuration = PostgresConnection.Configuration(host: "127.0.0.1", port: port, username: user, password: nil, database: database, tls: .disable)
        return try PostgresConnection.connect(on: MultiThreadedEventLoopGroup.singleton.next(), configuration: configuration, id: 0, logger: Self.logger).wait()
    }

    /// SIGINT (a fast shutdown) to the server's PID, then SIGKILL after 10 s; removes the folder.
    func stop() {
        if process.isRunning {
            kill(process.processIdentifier, SIGINT)
            if exited.wait(timeout: .now() + .seconds(10)) == .timedOut {
                kill(process.processIdentifier, SIGKILL)
                exited.wait()
            }
        }
        try? FileManager.default.removeItem(at: directory)
    }

    static let logger = Logger(label: "postgres-test-server")

    private func waitUntilReady(log: URL) throws {
        let deadline = Date().addingTimeInterval(30)
        while true {
            if !process.isRunning {
                throw Failure("postgres exited (\(process.terminationStatus)): \((try? String(contentsOf: log, encoding: .utf8)) ?? "")")
            }
            if let connection = try? connect(database: "postgres") {
                try? connection.close().wait()
                return
            }
            guard Date() < deadline else { throw Failure("postgres did not accept connections within 30 s") }
            usleep(20_000)  // between polls of readiness, not a wait for it
        }
    }

    /// The highest `/usr/lib/postgresql/VERSION/bin` holding initdb and postgres.
    private static func binaries() throws -> URL {
        let root = URL(fileURLWithPath: "/usr/lib/postgresql")
        let versions = ((try? FileManager.default.contentsOfDirectory(atPath: root.path)) ?? []).compactMap(Int.init).sorted()
        for version in versions.reversed() {
            let bin = root.appendingPathComponent("\(version)/bin")
            if ["initdb", "postgres"].allSatisfy({ FileManager.default.isExecutableFile(atPath: bin.appendingPathComponent($0).path) }) {
                return bin
            }
        }
        throw Failure("no PostgreSQL server under /usr/lib/postgresql: scripts/test installs Debian's postgresql package")
    }

    /// Under root: `setpriv` to the `postgres` user, who is given `folders`; otherwise nothing.
    private static func unprivilegedPrefix(owning folders: [URL]) throws -> [String] {
        guard getuid() == 0 else { return [] }
        guard let account = getpwnam("postgres") else { throw Failure("no postgres user: scripts/test installs Debian's postgresql package") }
        for folder in folders {
            try FileManager.default.setAttributes(
                [.ownerAccountID: NSNumber(value: account.pointee.pw_uid), .groupOwnerAccountID: NSNumber(value: account.pointee.pw_gid)],
                ofItemAtPath: folder.path)
        }
        return ["/usr/bin/setpriv", "--reuid=\(account.pointee.pw_uid)", "--regid=\(account.pointee.pw_gid)", "--clear-groups", "--"]
    }

    private static func run(_ command: [String]) throws -> (status: Int32, output: String) {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: command[0])
        process.arguments = Array(command.dropFirst())
        let pipe = Pipe()
        process.standardOutput = pipe
        process.standardError = pipe
        let done = DispatchGroup()
        done.enter()
        process.terminationHandler = { _ in done.leave() }
        try process.run()
        let output = pipe.fileHandleForReading.readDataToEndOfFile()
        done.wait()
        return (process.terminationStatus, String(decoding: output, as: UTF8.self))
    }

    /// With Debian's `openssl`: a root (`ca.pem`) and the server's certificate it signed, for
    /// `localhost` and `127.0.0.1` (`server.pem`, `server.key` mode 0600), and a second,
    /// unrelated root (`other-ca.pem`). P-256 keys, valid two days.
    private static func makeCertificates(in folder: URL) throws {
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        func path(_ name: String) -> String { folder.appendingPathComponent(name).path }
        try "subjectAltName=DNS:localhost,IP:127.0.0.1\n".write(toFile: path("san.cnf"), atomically: true, encoding: .utf8)
        let key = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"]
        let steps: [[String]] = [
            ["req", "-x509"] + key + ["-keyout", path("ca.key"), "-out", path("ca.pem"), "-days", "2", "-subj", "/CN=switchboard-test-ca"],
            ["req", "-x509"] + key + ["-keyout", path("other-ca.key"), "-out", path("other-ca.pem"), "-days", "2", "-subj", "/CN=someone-else"],
            ["req"] + key + ["-keyout", path("server.key"), "-out", path("server.csr"), "-subj", "/CN=localhost"],
            ["x509", "-req", "-in", path("server.csr"), "-CA", path("ca.pem"), "-CAkey", path("ca.key"), "-CAcreateserial",
             "-out", path("server.pem"), "-days", "2", "-extfile", path("san.cnf")],
        ]
        for step in steps {
            let done = try run(["/usr/bin/openssl"] + step)
            guard done.status == 0 else { throw Failure("openssl \(step.first ?? "") failed (\(done.status)): \(done.output)") }
        }
        try FileManager.default.setAttributes([.posixPermissions: 0o600], ofItemAtPath: path("server.key"))
    }

    /// A port 127.0.0.1 had free a moment ago (bound to port 0, then released).
    private static func freePort() throws -> Int {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw Failure("socket: \(errno)") }
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = 0
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) == 0 && getsockname(fd, $0, &length) == 0 }
        }
        guard bound else { throw Failure("bind: \(errno)") }
        return Int(UInt16(bigEndian: address.sin_port))
    }

    struct Failure: Error, CustomStringConvertible {
        let description: String
        init(_ description: String) { self.description = description }
    }

    /// Ends the server when the test bundle finishes.
    private final class StopAtExit: NSObject, XCTestObservation {
        let server: PostgresTestServer
        init(server: PostgresTestServer) { self.server = server }
        func testBundleDidFinish(_ testBundle: Bundle) { server.stop() }
    }
}
