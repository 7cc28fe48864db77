import Foundation
import SwitchboardAdmin
import SwitchboardCore

/// What the client listener serves over plain HTTP besides PeerJS's routes: static files from
/// directories (`/sdk/`, `/demo/`, `http.static`) and the development token route.
public struct HTTPConfiguration: Sendable, Equatable {
    /// Directories served, in the order they are matched.
    public var mounts: [StaticMount]
    /// Whether `POST /dev/token` exists (`auth.dev_tokens`, `serve --dev`).
    public var devTokens: Bool

    public init(mounts: [StaticMount] = [], devTokens: Bool = false) {
        self.mounts = mounts
        self.devTokens = devTokens
    }

    /// Where the browser library is served.
    public static let sdkPrefix = "/sdk/"
    /// Where the demo app is served.
    public static let demoPrefix = "/demo/"

    /// Reads `http.*` and `auth.dev_tokens`. `reserved` are the paths no mount may hide (the
    /// WebSocket paths and the PeerJS HTTP routes).
    init(reading values: ConfigValues, reserved: [String]) throws {
        var mounts: [(mount: StaticMount, key: String)] = []
        // The SDK directory is on by default: one that does not exist (the daemon started away
        // from a checkout) is left out with a notice at start, not a configuration error.
        let sdk = try values.string("http.sdk_dir")
        if !sdk.isEmpty { mounts.append((StaticMount(prefix: Self.sdkPrefix, directory: sdk), "http.sdk_dir")) }
        if try values.bool("http.demo") {
            let demo = try values.string("http.demo_dir")
            guard Self.isDirectory(demo) else {
                throw SwitchboardError(.invalidConfiguration, "http.demo_dir: \(demo) is not a directory (http.demo is on)")
            }
            mounts.append((StaticMount(prefix: Self.demoPrefix, directory: demo), "http.demo_dir"))
        }
        for entry in try values.strings("http.static") {
            guard let mount = StaticMount(entry: entry) else {
                throw SwitchboardError(
                    .invalidConfiguration, "http.static: \"\(LogText.escape(entry, limit: 80))\" is not PREFIX=DIRECTORY with a URL path prefix such as /assets/")
            }
            guard Self.isDirectory(mount.directory) else {
                throw SwitchboardError(.invalidConfiguration, "http.static: \(mount.directory) is not a directory")
            }
            mounts.append((mount, "http.static"))
        }
        for (index, (mount, key)) in mounts.enumerated() {
            if mount.prefix == "/" {
                throw SwitchboardError(.invalidConfiguration, "\(key): the prefix / would hide every other route")
            }
            if let hidden = (reserved + [DevTokenRoute.path]).first(where: mount.covers) {
                throw SwitchboardError(.invalidConfiguration, "\(key): the prefix \(mount.prefix) would hide \(hidden)")
            }
            if let earlier = mounts[..<index].first(where: { $0.mount.prefix == mount.prefix }) {
                throw SwitchboardError(.invalidConfiguration, "\(key): the prefix \(mount.prefix) is served already (\(earlier.key))")
            }
        }
        self.mounts = mounts.map(\.mount)
        self.devTokens = try values.bool("auth.dev_tokens")
    }

    static func isDirectory(_ path: String) -> Bool {
        var isDirectory: ObjCBool = false
        return FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory) && isDirectory.boolValue
    }
}
