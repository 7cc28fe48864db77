import CSwitchboardShims
import Foundation

/// An exclusive lock on a file (flock), held until the process exits, that names its holder:
/// the state directory's `switchboard.lock`, so two daemons never share one store.
public final class ProcessLock: Sendable {
    /// The locked file.
    public let path: String
    private let descriptor: Int32

    /// Takes the lock on `directory/switchboard.lock` (creating the directory), or throws a
    /// ``TransportError`` naming the directory and the process that holds it.
    public init(directory: String) throws {
        try? FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let path = (directory as NSString).appendingPathComponent("switchboard.lock")
        var holder = [CChar](repeating: 0, count: 64)
        let fd = sb_lock_file(path, &holder, holder.count)
        if fd == -EWOULDBLOCK {
            let pid = String(decoding: holder.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
                .trimmingCharacters(in: .whitespacesAndNewlines)
            throw TransportError(
                "the state directory \(directory) is in use by another switchboard (pid \(pid.isEmpty ? "unknown" : pid), lock \(path)); "
                    + "each daemon needs a state directory of its own")
        }
        guard fd >= 0 else {
            throw TransportError("cannot lock the state directory \(directory) (\(path)): \(String(cString: sb_strerror(-fd)))")
        }
        self.path = path
        self.descriptor = fd
    }

    deinit { _ = sb_close(descriptor) }
}

/// The admin API's generated bearer token: `<state directory>/admin.token`, created at first
/// start (mode 0600) when no token is configured, and read back at every later start.
public enum AdminTokenFile {
    /// The token in `directory/admin.token`, created with `generate()` if the file does not
    /// exist. Returns the token and the file's path; throws a ``TransportError`` naming the file.
    public static func loadOrCreate(directory: String, generate: () -> String) throws -> (token: String, path: String, created: Bool) {
        try PrivateStateFile.loadOrCreate(directory: directory, name: "admin.token", what: "admin token", generate: generate)
    }
}

/// A secret the daemon keeps in its state directory: one line, created mode 0600 at first start.
public enum PrivateStateFile {
    /// The first line of `directory/name` (at least 16 bytes), created with `generate()` if the
    /// file does not exist. Throws a ``TransportError`` naming the file.
    public static func loadOrCreate(directory: String, name: String, what: String, generate: () -> String) throws -> (token: String, path: String, created: Bool) {
        try? FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let path = (directory as NSString).appendingPathComponent(name)
        if let existing = try? String(contentsOfFile: path, encoding: .utf8) {
            let token = existing.split(whereSeparator: \.isNewline).first.map(String.init)?.trimmingCharacters(in: .whitespaces) ?? ""
            guard token.utf8.count >= 16 else { throw TransportError("\(path) holds no \(what) of at least 16 bytes; delete it to have a new one generated") }
            return (token, path, false)
        }
        let token = generate()
        let result = sb_create_private_file(path, token + "\n")
        guard result == 0 else { throw TransportError("cannot create the \(what) file \(path): \(String(cString: sb_strerror(-result)))") }
        return (token, path, true)
    }
}

/// The process's heap.
public enum ProcessMemory {
    /// Hands free heap memory back to the kernel (glibc keeps it after a load otherwise, and the
    /// RSS stays at its peak). Returns whether any was released.
    @discardableResult
    public static func releaseFree() -> Bool { sb_release_free_memory() == 1 }

    /// Fixes the allocator's mmap and trim thresholds (256 KiB), so that one large block freed
    /// after a load does not make the heap keep that much free memory resident. Call at start.
    public static func fixThresholds() { sb_fix_malloc_thresholds() }
}
