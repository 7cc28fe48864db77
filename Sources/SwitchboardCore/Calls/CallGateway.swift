import DequeModule
import Foundation

/// The `/v1/connect` state machine: sockets, authentication, client connections that outlive
/// their sockets (resume), per-connection event sequence and replay buffer, and the
/// ``CallEngine`` behind them.
///
/// Pure, like the engine: the host feeds it socket events, verified tokens and ticks with the
/// current time, commits ``CallGatewayOutput/mutations``, then runs the commands.
public struct CallGateway: Sendable {
    public internal(set) var engine: CallEngine
    public var configuration: CallConfiguration { engine.configuration }
    /// Sockets that opened and have not authenticated yet.
    var pending: [ConnectionID: PendingSocket] = [:]
    /// Authenticated sockets.
    var sockets: [ConnectionID: SocketState] = [:]
    /// Client connections, attached to a socket or waiting for a resume.
    public internal(set) var clients: [ClientConnectionID: ClientConnection] = [:]
    var userClients: [UserID: Set<ClientConnectionID>] = [:]
    /// When ``tick(now:into:)`` next scans sockets and connections.
    var wakeAt = Date.distantPast
    /// Failed authentications per remote address (``CallConfiguration/authFailuresPerMinute``).
    var authFailures: [String: TokenBucket] = [:]
    /// Push devices by user, oldest first, and who owns each token.
    public internal(set) var devices: [UserID: [DeviceRecord]] = [:]
    var deviceOwners: [DeviceKey: UserID] = [:]
    /// Calls this node cannot run now (another node holds them, or the claim failed), with the
    /// error their requests get; the host sets it for a batch (``refuse(_:)``) and clears it after.
    public internal(set) var refusedCalls: [CallCID: SwitchboardError] = [:]
    /// Calls another live node runs, with their owner: requests for them are forwarded to it
    /// (``forward(_:)``); set for a batch and cleared with the refusals.
    public internal(set) var forwardedCalls: [CallCID: CallOwner] = [:]
    /// Forwarded requests waiting for their owner's answer, by ticket.
    var awaiting: [String: AwaitedAnswer] = [:]
    /// The sessions each client connection holds in calls other nodes run (from their joins'
    /// answers), for routing its `signal.send`. Beside ``clients``, not in them: a connection is
    /// copied on every request, and a field more costs each copy.
    var remoteSessions: [ClientConnectionID: [SessionID: CallCID]] = [:]
    /// Other nodes run calls too (ADR 0012, step 3): events that may reach connections held
    /// elsewhere, and connections whose resume window passed here, are also put out for them.
    public var sharesCalls = false

    public init(configuration: CallConfiguration) {
        self.engine = CallEngine(configuration: configuration)
    }

    /// Authenticated sockets.
    public var socketCount: Int { sockets.count }
    /// Sockets still authenticating.
    public var pendingCount: Int { pending.count }
}

/// A socket that has not authenticated.
struct PendingSocket: Sendable, Equatable {
    var openedAt: Date
    var remoteAddress: String
    /// A token check is under way; frames wait for its answer.
    var verifying: Bool
    /// Frames that arrived while the token was being checked, run in order once it passes.
    var queued: [[UInt8]] = []

    /// Most frames held while a token is checked; one more closes the socket (4001).
    static let maximumQueued = 16
}

/// An authenticated socket.
struct SocketState: Sendable, Equatable {
    var client: ClientConnectionID
    var lastActivity: Date
    var remoteAddress: String
    /// Requests this socket may still send, and may still have refused before it is closed
    /// (``CallConfiguration/messageRate``).
    var bucket: MessageBudget
}

/// A client connection: one device of one user, across the sockets that resume it.
public struct ClientConnection: Sendable, Equatable {
    public var id: ClientConnectionID
    public var user: UserID
    public var token: UserToken
    public var resumeToken: String
    public var connectedAt: Date
    /// The socket it is attached to; `nil` while waiting for a resume.
    public var socket: ConnectionID?
    public var detachedAt: Date?
    /// The `seq` the next event gets.
    public var nextSeq: UInt64 = 1
    /// The last events sent, for replay on resume (a ring: the oldest leaves in O(1)).
    var buffer: Deque<(seq: UInt64, frame: [UInt8])> = []
    var expiringSent = false
    public var remoteAddress: String
    /// Rebuilt after a restart and not resumed since: events sent before the restart are
    /// unknown, so a resume cannot be complete.
    var restored = false

    public static func == (lhs: Self, rhs: Self) -> Bool {
        lhs.id == rhs.id && lhs.user == rhs.user && lhs.token == rhs.token && lhs.socket == rhs.socket && lhs.detachedAt == rhs.detachedAt
            && lhs.nextSeq == rhs.nextSeq && lhs.buffer.map(\.seq) == rhs.buffer.map(\.seq)
    }

    var actor: CallActor {
        CallActor(user: user, connection: id, allowedCIDs: token.callCIDs.map(Set.init), isAdmin: token.role == "admin")
    }

    var record: ConnectionRecord {
        ConnectionRecord(id: id, userID: user, resumeToken: resumeToken, connectedAt: connectedAt, tokenExpiresAt: token.expiresAt, detachedAt: detachedAt)
    }
}

/// Why a token is being checked.
public enum TokenPurpose: Sendable, Equatable {
    /// Authentication of a new socket (first frame, header or query).
    case auth(id: JSONValue, resume: ResumeRequest?)
    /// `token.refresh` on an authenticated socket.
    case refresh(id: JSONValue)
}

/// A token the host must verify (off the state queue) and hand back with
/// ``CallGateway/tokenChecked(_:purpose:result:now:newID:into:)``.
public struct TokenCheck: Sendable, Equatable {
    public var socket: ConnectionID
    public var token: String
    public var purpose: TokenPurpose
}

/// What the gateway asks its host to do.
public struct CallGatewayOutput: Sendable {
    public var calls = CallOutput()
    /// Frames and closes, to run after the mutations are committed.
    public var commands: [OutboundCommand] = []
    public var tokenChecks: [TokenCheck] = []
    /// Requests answered in this batch, to answer `unavailable` instead if the commit fails.
    public var responded: [(socket: ConnectionID, id: JSONValue)] = []
    /// Authentication failures by code (metrics).
    public var authFailures: [String] = []
    /// Notices turned into event frames.
    public var deliveredNotices = 0
    /// The first `seq` each client connection got in this batch (to take back on rollback).
    public var emitted: [ClientConnectionID: UInt64] = [:]
    /// Requests refused for the per-socket rate.
    public var limitedRequests = 0
    /// Client connections created in this batch.
    public var createdClients: Set<ClientConnectionID> = []
    /// For other nodes (``CallGateway/sharesCalls``), sent once the batch is committed:
    /// requests for calls they run, answers to requests they forwarded (by the node that
    /// forwarded each), events that may reach their connections, and connections whose resume
    /// window passed here.
    public var forwards: [ForwardedCallRequest] = []
    public var answers: [(origin: String, answer: ForwardedCallAnswer)] = []
    public var remoteNotices: [CallNotice] = []
    public var lostConnections: [ClientConnectionID] = []

    public init() {}

    public var mutations: [CallMutation] { calls.mutations }
}

extension CallGateway {
    /// Undoes a batch whose commit failed. The store is the truth: the engine is rebuilt from
    /// `snapshot` (when the store could still be read), events numbered in the batch are taken
    /// back, and client connections created in it are forgotten. Returns the sockets of those
    /// connections, for the host to close.
    public mutating func rollBack(_ output: CallGatewayOutput, snapshot: CallStateSnapshot?) -> [ConnectionID] {
        for (id, first) in output.emitted {
            clients[id]?.buffer.removeAll { $0.seq >= first }
            clients[id]?.nextSeq = first
        }
        for request in output.forwards { awaiting[request.ticket] = nil }
        var orphaned: [ConnectionID] = []
        for id in output.createdClients {
            remoteSessions[id] = nil
            guard let client = clients.removeValue(forKey: id) else { continue }
            userClients[client.user]?.remove(id)
            if let socket = client.socket {
                sockets[socket] = nil
                orphaned.append(socket)
            }
        }
        if let snapshot {
            var rebuilt = CallEngine(configuration: configuration)
            rebuilt.ringBuckets = engine.ringBuckets
            rebuilt.createBuckets = engine.createBuckets
            rebuilt.inviteBuckets = engine.inviteBuckets
            rebuilt.restore(snapshot)
            engine = rebuilt
            restore(devices: snapshot.devices)
        }
        return orphaned
    }

    /// Every socket the gateway knows, authenticated or not.
    public var knownSockets: [ConnectionID] { Array(sockets.keys) + Array(pending.keys) }

    /// Whether `socket` is a `/v1/connect` socket the gateway knows.
    public func owns(_ socket: ConnectionID) -> Bool { sockets[socket] != nil || pending[socket] != nil }
}

extension Deque where Element == (seq: UInt64, frame: [UInt8]) {
    /// Appends an event frame, dropping the oldest beyond `limit`.
    mutating func append(seq: UInt64, frame: [UInt8], keeping limit: Int) {
        append((seq, frame))
        if count > limit { removeFirst(count - limit) }
    }
}
