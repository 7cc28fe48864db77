import Foundation

/// Calls run by several nodes (ADR 0012, step 3). The node holding a client's socket keeps its
/// connection (authentication, `seq`, replay, rate); the node that claimed a call runs it. A
/// request for a call another live node runs is forwarded to that node, which answers it as its
/// own client's and sends the answer back; events go to every node, each delivering them to
/// the connections it holds. The host says which calls are run elsewhere for each batch
/// (``forward(_:)``, cleared with the refusals), carries ``CallGatewayOutput/forwards``,
/// ``CallGatewayOutput/answers``, ``CallGatewayOutput/remoteNotices`` and
/// ``CallGatewayOutput/lostConnections`` to the other nodes after the commit, and hands what
/// arrives to ``runForwarded(_:from:placer:newID:now:into:)``, ``answerArrived(_:into:)``,
/// ``noticesArrived(_:into:)`` and ``connectionsLostElsewhere(_:now:into:)``.
extension CallGateway {
    /// How long a forwarded request waits for its owner's answer before it is answered
    /// `unavailable` (the owner died, or the bus lost the message).
    public static let forwardTimeout: TimeInterval = 10

    /// Requests for these calls go to their owners until ``clearRefusals()``.
    public mutating func forward(_ calls: [CallCID: CallOwner]) {
        forwardedCalls.merge(calls) { _, new in new }
    }

    /// The call a parsed frame of `socket` touches when it is not in memory: a request naming
    /// one, or a `signal.send` from a session of the client in a call run elsewhere. The host
    /// loads it, or finds its owner, before the batch.
    public func needsLoad(_ parsed: Result<ClientFrame, ClientFrame.ParseFailure>, on socket: ConnectionID) -> CallCID? {
        if let cid = needsLoad(parsed) { return cid }
        // Only a signal names no call; and only a client that joined calls through other nodes
        // has sessions elsewhere.
        guard case .success(let frame) = parsed, case .signal = frame.request, let client = sockets[socket].flatMap({ clients[$0.client] }),
            remoteSessions[client.id] != nil
        else { return nil }
        return remoteCall(of: frame.request, client: client).flatMap { engine.call($0) == nil ? $0 : nil }
    }

    /// The call run elsewhere a `signal.send` belongs to: its target is no session here, and
    /// the sender's session (named, or the client's only one) is in a call it joined through
    /// another node.
    func remoteCall(of request: ClientRequest, client: ClientConnection) -> CallCID? {
        guard case .signal(let from, let to, _, _) = request, engine.callOf(session: to) == nil else { return nil }
        guard let sessions = remoteSessions[client.id] else { return nil }
        if let from { return sessions[from] }
        let calls = Set(sessions.values)
        return calls.count == 1 && engine.sessions(of: client.id).isEmpty ? calls.first : nil
    }

    /// Sends a request to the node running its call, if another does; `false` to run it here.
    mutating func forwardIfElsewhere(
        _ frame: ClientFrame, bytes: [UInt8], on socket: ConnectionID, client: ClientConnection, newID: () -> String, now: Date,
        into output: inout CallGatewayOutput
    ) -> Bool {
        guard !forwardedCalls.isEmpty, let cid = frame.request.cid ?? remoteCall(of: frame.request, client: client), let owner = forwardedCalls[cid] else {
            return false
        }
        guard let json = JSONValue.parse(bytes) else { return false }
        let ticket = newID()
        var joins = false
        if case .join = frame.request { joins = true }
        awaiting[ticket] = AwaitedAnswer(
            socket: socket, id: frame.id, client: client.id, cid: cid, owner: owner, joins: joins, deadline: now.addingTimeInterval(Self.forwardTimeout))
        wake(by: now.addingTimeInterval(Self.forwardTimeout))
        output.responded.append((socket, frame.id))
        output.forwards.append(
            ForwardedCallRequest(ticket: ticket, cid: cid, owner: owner, actor: client.actor, remoteAddress: client.remoteAddress, frame: json))
        return true
    }

    /// Runs a request another node forwarded, for a client connected there, and puts its
    /// answer in ``CallGatewayOutput/answers`` (sent once the batch is committed; answered
    /// `unavailable` instead when the commit fails, as a request of this node's own).
    public mutating func runForwarded(
        _ request: ForwardedCallRequest, from origin: String, placer: some CallPlacer, newID: () -> String, now: Date, into output: inout CallGatewayOutput
    ) {
        let result = Result { () throws(SwitchboardError) -> JSONValue in
            guard case .success(let frame) = parse(request.frame.bytes) else {
                throw SwitchboardError(.invalidRequest, "the forwarded request does not parse here")
            }
            guard frame.request.cid == nil || frame.request.cid == request.cid else {
                throw SwitchboardError(.invalidRequest, "the forwarded request names another call than \(request.cid)")
            }
            guard request.actor.may(touch: request.cid) else { throw SwitchboardError(.forbidden, "this token may not touch \(request.cid)") }
            if let refusal = refusedCalls[request.cid] { throw refusal }
            guard engine.call(request.cid) != nil || frame.request.creates else {
                throw SwitchboardError(.unavailable, "call \(request.cid) is not run here; try again")
            }
            return try callRequest(frame.request, actor: request.actor, remote: request.remoteAddress, placer: placer, newID: newID, now: now, out: &output.calls)
        }
        output.answers.append((origin, ForwardedCallAnswer(ticket: request.ticket, result: result)))
        flush(into: &output)
    }

    /// The owner answered a forwarded request: its socket gets the answer, if the client is
    /// still on it (a client that resumed on another socket asks again). Nothing to commit.
    public mutating func answerArrived(_ answer: ForwardedCallAnswer, into output: inout CallGatewayOutput) {
        guard let awaited = awaiting.removeValue(forKey: answer.ticket) else { return }
        if awaited.joins, case .success(.object(let data)) = answer.result, case .string(let session)? = data["session_id"] {
            if clients[awaited.client] != nil { remoteSessions[awaited.client, default: [:]][SessionID(session)] = awaited.cid }
        }
        guard sockets[awaited.socket]?.client == awaited.client else { return }
        switch answer.result {
        case .success(let data): output.commands.append(.send(awaited.socket, Self.response(awaited.id, data)))
        case .failure(let error): output.commands.append(.send(awaited.socket, Self.errorFrame(awaited.id, error)))
        }
    }

    /// Events another node's calls produced: delivered to the connections held here, each with
    /// its own `seq`, never passed on. Nothing to commit.
    public mutating func noticesArrived(_ notices: [CallNotice], into output: inout CallGatewayOutput) {
        output.deliveredNotices += notices.count
        deliver(notices, into: &output)
    }

    /// Client connections whose resume window passed on another node: their sessions in the
    /// calls run here leave (`connection_lost`), unless the connection is held here now.
    public mutating func connectionsLostElsewhere(_ connections: [ClientConnectionID], now: Date, into output: inout CallGatewayOutput) {
        for connection in connections where clients[connection] == nil {
            engine.connectionLost(connection, now: now, out: &output.calls)
        }
        flush(into: &output)
    }

    /// Answers `unavailable` the forwarded requests whose owner has not answered by `now`.
    mutating func expireForwards(now: Date, into output: inout CallGatewayOutput) {
        for (ticket, awaited) in awaiting.sorted(by: { $0.key < $1.key }) where now >= awaited.deadline {
            awaiting[ticket] = nil
            guard sockets[awaited.socket]?.client == awaited.client else { continue }
            output.commands.append(.send(awaited.socket, Self.errorFrame(awaited.id, .ownerSilent(awaited.owner))))
        }
    }

    /// The earliest deadline of a forwarded request.
    var nextForwardDeadline: Date? { awaiting.values.lazy.map(\.deadline).min() }

    /// Forwarded requests still waiting for their owner's answer.
    public var awaitingCount: Int { awaiting.count }
}

extension ClientRequest {
    /// The request may create its call (the owner then runs a call it does not hold yet).
    var creates: Bool {
        switch self {
        case .getOrCreate: true
        case .join(_, let create, _, _, _): create
        default: false
        }
    }
}

extension CallGatewayOutput {
    /// What goes to each of `nodes` (the other live nodes): requests to their owners, answers
    /// to the nodes that forwarded them, events and lost connections to every node.
    public func forwardBatches(to nodes: [String]) -> [String: CallForwardBatch] {
        var batches: [String: CallForwardBatch] = [:]
        for request in forwards { batches[request.owner.node, default: CallForwardBatch()].requests.append(request) }
        for (origin, answer) in answers { batches[origin, default: CallForwardBatch()].answers.append(answer) }
        if !remoteNotices.isEmpty || !lostConnections.isEmpty {
            for node in nodes {
                batches[node, default: CallForwardBatch()].notices += remoteNotices
                batches[node, default: CallForwardBatch()].lostConnections += lostConnections
            }
        }
        return batches.filter { !$0.value.isEmpty }
    }
}
