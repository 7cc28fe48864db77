import Foundation

/// A client connection a resume took over from the node that held it (ADR 0012, step 3).
public struct ConnectionTakeover: Sendable, Equatable {
    /// The connection, now this node's.
    public var record: ConnectionRecord
    /// The node that held it before; `nil` when none was recorded.
    public var previous: String?
    /// Its active sessions in live calls, whichever node runs them: the resumed client is
    /// told of them (`connection.ok` `sessions`) and its signals reach them.
    public var sessions: [SessionRecord]

    public init(record: ConnectionRecord, previous: String?, sessions: [SessionRecord] = []) {
        self.record = record
        self.previous = previous
        self.sessions = sessions
    }
}

/// Which node holds each client connection, on a store several daemons share (ADR 0012, step
/// 3): a store made one node's stamps the connections it saves with its node
/// (``ConnectionRecord/node``). A daemon restores at start only the connections it may hold (none
/// of another node's), takes over by its resume token a connection whose client resumes on it,
/// and the node running a call ends the sessions of connections no live node holds any more.
/// A store of one daemon holds every connection in its one gateway: the defaults.
extension CallStore {
    /// Takes over, for this node, the connection `resumeToken` names, if it is `user`'s.
    public func takeConnection(resumeToken: String, user: UserID) throws -> ConnectionTakeover? { nil }

    /// Of `ids`, the connections no live node holds: gone from the store, or held by a node
    /// whose lease lapsed at least `window` ago (their clients had that long to resume elsewhere).
    public func lostConnections(_ ids: Set<ClientConnectionID>, after window: Duration) throws -> Set<ClientConnectionID> { [] }
}
