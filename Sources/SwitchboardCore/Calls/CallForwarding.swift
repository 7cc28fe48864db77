import Foundation

/// A request of a client connected to one node, for a call another node runs (ADR 0012, step
/// 3). The client's node checks the socket (authentication, rate, the token's `call_cids`) and
/// sends the request to the call's owner, which runs it as if the client were its own and
/// sends the answer back; the client's node answers the socket.
public struct ForwardedCallRequest: Sendable, Equatable {
    /// Unique on the client's node: the answer names it.
    public var ticket: String
    /// The call it touches, and the owner the client's node sent it to (the owner refuses a
    /// request made for a generation it does not hold).
    public var cid: CallCID
    public var owner: CallOwner
    /// Who asks, as the client's node verified it.
    public var actor: CallActor
    public var remoteAddress: String
    /// The client's frame as parsed (the owner parses it again with its own limits: one rule).
    public var frame: JSONValue

    public init(ticket: String, cid: CallCID, owner: CallOwner, actor: CallActor, remoteAddress: String, frame: JSONValue) {
        self.ticket = ticket
        self.cid = cid
        self.owner = owner
        self.actor = actor
        self.remoteAddress = remoteAddress
        self.frame = frame
    }
}

/// The owner's answer to a ``ForwardedCallRequest``: the response's `data`, or the error.
public struct ForwardedCallAnswer: Sendable, Equatable {
    public var ticket: String
    public var result: Result<JSONValue, SwitchboardError>

    public init(ticket: String, result: Result<JSONValue, SwitchboardError>) {
        self.ticket = ticket
        self.result = result
    }
}

/// An admin API change to a call another node runs (ADR 0012, step 3.5): the node that took
/// the HTTP request sends it to the call's owner, which makes it as its own admin API would,
/// and answers with a ``ForwardedCallAnswer`` (empty `data`, or the error).
public struct ForwardedAdminRequest: Sendable, Equatable {
    public enum Action: Sendable, Equatable {
        /// `POST /v1/calls/{type}/{id}/end`.
        case end
        /// `DELETE /v1/calls/{type}/{id}/sessions/{session}`.
        case kick(SessionID)
    }

    /// Unique on the asking node: the answer names it.
    public var ticket: String
    public var cid: CallCID
    /// The owner the asking node sent it to.
    public var owner: CallOwner
    public var action: Action

    public init(ticket: String, cid: CallCID, owner: CallOwner, action: Action) {
        self.ticket = ticket
        self.cid = cid
        self.owner = owner
        self.action = action
    }
}

/// A forwarded request the client's node waits for: whom to answer, and until when.
struct AwaitedAnswer: Sendable, Equatable {
    var socket: ConnectionID
    var id: JSONValue
    var client: ClientConnectionID
    var cid: CallCID
    var owner: CallOwner
    /// The request was a `call.join`: its session is remembered for the client's `signal.send`.
    var joins: Bool
    var deadline: Date
}

/// What one node sends another about the calls they share in one batch, in order: requests
/// for calls the receiver runs, answers to requests the receiver forwarded, events for the
/// receiver's client connections, and client connections whose resume window passed on the
/// sender (their sessions leave every call).
public struct CallForwardBatch: Sendable, Equatable {
    public var requests: [ForwardedCallRequest] = []
    public var answers: [ForwardedCallAnswer] = []
    public var notices: [CallNotice] = []
    public var lostConnections: [ClientConnectionID] = []
    /// Connections the sender took over by a resume: the node holding one lets it go.
    public var movedConnections: [ClientConnectionID] = []
    /// Admin API changes to calls the receiver runs.
    public var adminRequests: [ForwardedAdminRequest] = []

    public init(
        requests: [ForwardedCallRequest] = [], answers: [ForwardedCallAnswer] = [], notices: [CallNotice] = [], lostConnections: [ClientConnectionID] = [],
        movedConnections: [ClientConnectionID] = [], adminRequests: [ForwardedAdminRequest] = []
    ) {
        self.requests = requests
        self.answers = answers
        self.notices = notices
        self.lostConnections = lostConnections
        self.movedConnections = movedConnections
        self.adminRequests = adminRequests
    }

    public var isEmpty: Bool {
        requests.isEmpty && answers.isEmpty && notices.isEmpty && lostConnections.isEmpty && movedConnections.isEmpty && adminRequests.isEmpty
    }

    /// The bus message kind these batches travel as.
    public static let messageKind = "calls"
}

extension SwitchboardError {
    /// The owner of a forwarded request did not answer in time.
    public static func ownerSilent(_ owner: CallOwner) -> SwitchboardError {
        SwitchboardError(.unavailable, "\(owner), which runs the call, did not answer; try again")
    }
}
