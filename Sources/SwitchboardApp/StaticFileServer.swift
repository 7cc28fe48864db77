import Foundation
import SwitchboardCore

/// Serves the files of ``StaticMount``s from disk, read at each request (off the signaling
/// queue), so an edited page is served at once.
///
/// A file is served only when its path, with every symbolic link resolved, is still inside its
/// mount's directory (also resolved): a link out of the tree answers 404 like a missing file.
/// Only regular files up to ``maxFileBytes`` are served.
public struct StaticFileServer: Sendable {
    /// A mount with its directory's resolved path.
    struct Root: Sendable {
        let mount: StaticMount
        let resolved: String
    }

    let roots: [Root]
    /// The largest file served; a larger one answers 404 (it is not meant for this server).
    public let maxFileBytes: Int

    /// Resolves each mount's directory now; a mount whose directory does not exist is left out.
    public init(mounts: [StaticMount], maxFileBytes: Int = 16 << 20) {
        self.roots = mounts.compactMap { mount in
            Self.isDirectory(mount.directory) ? Root(mount: mount, resolved: Self.resolve(mount.directory)) : nil
        }
        self.maxFileBytes = maxFileBytes
    }

    /// The mounts actually served.
    public var mounts: [StaticMount] { roots.map(\.mount) }

    /// Whether `path` is under one of the mounts.
    public func handles(_ path: String) -> Bool {
        roots.contains { $0.mount.covers(path) }
    }

    /// The answer to `request`, or `nil` when its path is under no mount.
    public func respond(to request: HTTPRequest) -> HTTPResponse? {
        guard let root = roots.first(where: { $0.mount.covers(request.path) }),
            let target = root.mount.target(for: request.path)
        else { return nil }
        if let refusal = StaticContent.methodNotAllowed(request) { return refusal }
        switch target {
        case .redirect(let location):
            return StaticContent.redirect(to: location)
        case .refused:
            return notFound(request)
        case .file(let segments):
            guard let file = read(segments, in: root) else { return notFound(request) }
            return StaticContent.response(to: request, fileName: segments[segments.count - 1], body: file.bytes, tag: file.tag)
        }
    }

    private func read(_ segments: [String], in root: Root) -> (bytes: [UInt8], tag: String)? {
        let candidate = root.resolved + "/" + segments.joined(separator: "/")
        let resolved = Self.resolve(candidate)
        guard resolved.hasPrefix(root.resolved + "/"),
            let attributes = try? FileManager.default.attributesOfItem(atPath: resolved),
            attributes[.type] as? FileAttributeType == .typeRegular,
            let size = (attributes[.size] as? NSNumber)?.intValue, size <= maxFileBytes,
            let data = FileManager.default.contents(atPath: resolved)
        else { return nil }
        let modified = (attributes[.modificationDate] as? Date) ?? Date(timeIntervalSince1970: 0)
        let tag = StaticContent.entityTag(size: data.count, modifiedNanoseconds: Int64(modified.timeIntervalSince1970 * 1e9))
        return (Array(data), tag)
    }

    private func notFound(_ request: HTTPRequest) -> HTTPResponse {
        SwitchboardError(.notFound, "no file at \(LogText.escape(request.path, limit: 200))").httpResponse
    }

    static func resolve(_ path: String) -> String {
        URL(fileURLWithPath: path).resolvingSymlinksInPath().standardizedFileURL.path
    }

    static func isDirectory(_ path: String) -> Bool {
        var isDirectory: ObjCBool = false
        return FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory) && isDirectory.boolValue
    }
}
