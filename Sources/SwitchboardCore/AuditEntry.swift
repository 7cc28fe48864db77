import Foundation

/// One administrative action, kept in the append-only audit log.
public struct AuditEntry: Sendable, Equatable, Codable {
    /// Assigned by the store on append.
    public var id: Int64?
    /// When it happened (wall clock).
    public var at: Date
    /// Who did it: the admin client's address.
    public var actor: String
    /// What was done (`drain`, `peer.disconnect`, `log_level.set`, …).
    public var action: String
    /// What it was done to (a peer id, a level), if anything.
    public var target: String
    /// Free-form detail.
    public var detail: String

    public init(id: Int64? = nil, at: Date, actor: String, action: String, target: String = "", detail: String = "") {
        self.id = id
        self.at = at
        self.actor = actor
        self.action = action
        self.target = target
        self.detail = detail
    }
}

extension AuditEntry {
    /// The rule every store applies before it appends: no text holds NUL (SQLite's and
    /// PostgreSQL's text both stop at or refuse it), refused rather than stored truncated.
    public func validate() throws(SwitchboardError) {
        for text in [actor, action, target, detail] where text.utf8.contains(0) {
            throw SwitchboardError(.invalidRequest, "audit text must not contain NUL characters")
        }
    }
}

/// The store port for the audit log. Implementations commit before returning: a returned
/// entry is durable.
public protocol AuditLog: Sendable {
    /// Appends an entry and returns it with its id.
    func append(_ entry: AuditEntry) throws -> AuditEntry
    /// Entries newest first, with ids below `before` when given.
    func entries(limit: Int, before: Int64?) throws -> [AuditEntry]
}

/// The store's health, for readiness.
public protocol StoreHealth: Sendable {
    /// Whether a write transaction can be started and committed now.
    func isWritable() -> Bool
}
