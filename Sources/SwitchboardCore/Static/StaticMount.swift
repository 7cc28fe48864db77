/// One URL prefix served from one directory (`/sdk/` → `clients/js/src`), as a pure rule from a
/// request path to the file it names. The path arrives percent-decoded from the transport and is
/// never decoded again, so `%252e%252e` stays the literal name `%2e%2e`.
///
/// What may be named: path segments that are not empty, `.` or `..`, do not start with `.`
/// (dot files such as `.git` stay hidden), and hold no control byte, NUL or backslash. A path
/// ending in `/` names that directory's `index.html`. Symbolic links are the file adapter's
/// concern: it serves a file only when its resolved path is still inside the directory.
public struct StaticMount: Sendable, Equatable {
    /// The URL prefix, starting and ending with `/`.
    public let prefix: String
    /// The directory served (as configured; the adapter resolves it).
    public let directory: String

    /// Where a request path leads.
    public enum Target: Sendable, Equatable {
        /// The file at these path segments below ``directory``.
        case file([String])
        /// The prefix without its trailing slash: redirect to ``prefix`` (relative imports in
        /// the served pages need the slash).
        case redirect(String)
        /// Under the prefix but not a name this mount serves (404, whatever is on disk).
        case refused
    }

    /// `prefix` is normalised to start and end with `/`.
    public init(prefix: String, directory: String) {
        var normalised = prefix.hasPrefix("/") ? prefix : "/" + prefix
        if !normalised.hasSuffix("/") { normalised += "/" }
        self.prefix = normalised
        self.directory = directory
    }

    /// Parses a `PREFIX=DIRECTORY` entry of `http.static`; `nil` when it is not of that shape
    /// or the prefix is not an absolute URL path.
    public init?(entry: String) {
        guard let equals = entry.firstIndex(of: "=") else { return nil }
        let prefix = String(entry[..<equals])
        let directory = String(entry[entry.index(after: equals)...])
        guard prefix.hasPrefix("/"), !directory.isEmpty, Self.isSafe(prefix) else { return nil }
        self.init(prefix: prefix, directory: directory)
    }

    /// The target of `path`, or `nil` when the path is not under this mount.
    public func target(for path: String) -> Target? {
        if path + "/" == prefix { return .redirect(prefix) }
        guard path.hasPrefix(prefix) else { return nil }
        var segments = path.dropFirst(prefix.count).split(separator: "/", omittingEmptySubsequences: false).map(String.init)
        if segments.last == "" { segments[segments.count - 1] = "index.html" }
        guard segments.allSatisfy(Self.isServable) else { return .refused }
        return .file(segments)
    }

    /// Whether the mount's prefix overlaps `path` (a WebSocket or route path it would hide).
    public func covers(_ path: String) -> Bool {
        path.hasPrefix(prefix) || path + "/" == prefix
    }

    private static func isServable(_ segment: String) -> Bool {
        guard let first = segment.utf8.first, first != UInt8(ascii: ".") else { return false }
        return isSafe(segment)
    }

    private static func isSafe(_ text: String) -> Bool {
        !text.utf8.contains { $0 < 0x20 || $0 == 0x7F || $0 == UInt8(ascii: "\\") }
            && !text.split(separator: "/").contains { $0 == "." || $0 == ".." }
    }
}
