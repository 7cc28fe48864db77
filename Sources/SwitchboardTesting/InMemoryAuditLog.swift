import Foundation
import SwitchboardCore

/// The in-memory twin of the SQLite audit log; can be told to fail, like a full disk.
public final class InMemoryAuditLog: AuditLog, StoreHealth, @unchecked Sendable {
    private let lock = NSLock()
    private var stored: [AuditEntry] = []
    private var failing = false

    public init() {}

    /// From now on writes fail (and ``isWritable()`` is false) until set back.
    public func setFailing(_ value: Bool) { lock.withLock { failing = value } }

    public var all: [AuditEntry] { lock.withLock { stored } }

    public func append(_ entry: AuditEntry) throws -> AuditEntry {
        try entry.validate()
        return try lock.withLock {
            if failing { throw SwitchboardError(.unavailable, "disk full") }
            var saved = entry
            saved.id = Int64(stored.count + 1)
            stored.append(saved)
            return saved
        }
    }

    public func entries(limit: Int, before: Int64?) throws -> [AuditEntry] {
        lock.withLock {
            Array(stored.reversed().filter { $0.id! < (before ?? .max) }.prefix(limit))
        }
    }

    public func isWritable() -> Bool { lock.withLock { !failing } }
}
