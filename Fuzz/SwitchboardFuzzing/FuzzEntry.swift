import Foundation

/// A fuzz target: one parser of untrusted (or operator-written) input, with the logic that runs
/// one input through it. The libFuzzer executables (`fuzz-<name>`) and the regression tests
/// call the same ``run(_:)``, so a crasher replays exactly as the fuzzer found it.
public enum FuzzTarget: String, CaseIterable, Sendable {
    /// PeerJS frames: ``PeerJSInbound``, ``JSONScanner``, and a ``PeerRelay`` driven by them.
    case peerJSFrame = "peerjs-frame"
    /// Call-protocol frames: ``ClientFrame`` and a ``CallGateway`` driven by them.
    case callFrame = "call-frame"
    /// Admin API requests and JSON bodies through ``AdminRouter``.
    case adminBody = "admin-body"
    /// User tokens (HS256 JWTs) through ``JWTTokenService/verify(_:)``.
    case token = "token"
    /// The JSON config file through ``ConfigurationLoader``, plus the region and IP-prefix CSVs.
    case config = "config"

    /// The executable's product name.
    public var executable: String { "fuzz-" + rawValue }

    /// Runs one input. Crashes (traps) are findings by themselves; a returned ``FuzzFinding``
    /// is a broken invariant that did not trap (a 5xx, an invalid frame sent, …).
    public func run(_ bytes: [UInt8]) -> FuzzFinding? {
        switch self {
        case .peerJSFrame: PeerJSFrameEntry.run(bytes)
        case .callFrame: CallFrameEntry.run(bytes)
        case .adminBody: AdminBodyEntry.run(bytes)
        case .token: TokenEntry.run(bytes)
        case .config: ConfigEntry.run(bytes)
        }
    }

    /// What the libFuzzer entry point calls: a finding becomes a trap, so libFuzzer keeps the input.
    public func runTrappingOnFinding(_ bytes: [UInt8]) {
        if let finding = run(bytes) {
            fatalError("fuzz finding in \(rawValue): \(finding.message)")
        }
    }

    /// `main` of a fuzz executable built without `-sanitize=fuzzer`: replays the files named on
    /// the command line (or every file in a named directory) and exits non-zero on a finding.
    public func replayMain(arguments: [String] = CommandLine.arguments) -> Never {
        let paths = arguments.dropFirst().flatMap(Self.files(at:))
        guard !paths.isEmpty else {
            FileHandle.standardError.write(Data("usage: \(executable) FILE|DIR...  (replays inputs; build with scripts/fuzz to fuzz)\n".utf8))
            exit(2)
        }
        var findings = 0
        for path in paths {
            guard let data = FileManager.default.contents(atPath: path) else {
                FileHandle.standardError.write(Data("cannot read \(path)\n".utf8))
                exit(2)
            }
            if let finding = run(Array(data)) {
                findings += 1
                print("FINDING \(path): \(finding.message)")
            } else {
                print("ok \(path)")
            }
        }
        exit(findings == 0 ? 0 : 1)
    }

    /// The regular files at `path`: the file itself, or a directory's files sorted by name.
    public static func files(at path: String) -> [String] {
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory) else { return [path] }
        guard isDirectory.boolValue else { return [path] }
        let names = (try? FileManager.default.contentsOfDirectory(atPath: path)) ?? []
        return names.filter { !$0.hasPrefix(".") && !$0.hasSuffix(".md") }.sorted().map { path + "/" + $0 }
    }
}

/// An invariant the input broke without crashing.
public struct FuzzFinding: Error, Sendable, CustomStringConvertible {
    public var message: String
    public init(_ message: String) { self.message = message }
    public var description: String { message }
}

/// `SWITCHBOARD_FUZZ_TRACE=1`: the stateful harnesses print each step and what it produced to
/// stderr (for writing seeds and triaging crashers: `SWITCHBOARD_FUZZ_TRACE=1 fuzz-x FILE`).
enum FuzzTrace {
    static let enabled = ProcessInfo.processInfo.environment["SWITCHBOARD_FUZZ_TRACE"] == "1"

    static func print(_ message: @autoclosure () -> String) {
        guard enabled else { return }
        FileHandle.standardError.write(Data((message() + "\n").utf8))
    }

    static func text(_ bytes: [UInt8]) -> String { String(decoding: bytes.prefix(400), as: UTF8.self) }
}

#if SWITCHBOARD_FUZZING
import CFuzzerDriver

extension FuzzTarget {
    /// `main` of a fuzz executable in the fuzz build: libFuzzer's driver, with the process's
    /// arguments and the target's entry point. SwiftPM links an executable with its own `main`,
    /// so libFuzzer's `main` is not the program's; this runs what it would have.
    public static func runLibFuzzer(_ testOneInput: @convention(c) (UnsafePointer<UInt8>?, Int) -> CInt) -> Never {
        var argc = CommandLine.argc
        var argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>? = CommandLine.unsafeArgv
        exit(LLVMFuzzerRunDriver(&argc, &argv, testOneInput))
    }
}
#endif
