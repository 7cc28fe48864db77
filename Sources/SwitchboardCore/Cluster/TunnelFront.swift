import DequeModule

/// A relaying node's side of the tunnel (ADR 0012): a node that does not lead still takes
/// clients' sockets and HTTP requests, hands their events to the leading node and carries out
/// the commands it sends back. Pure: the daemon feeds it transport events, the leader it
/// follows, the leader's batches and the time, and sends what it returns.
///
/// - A socket opened while no leader is known is closed with 1013 (try again later); an HTTP
///   request then is answered 503 (`unavailable`).
/// - When the leader changes (another node, a new generation) or goes, every socket relayed to
///   the old one is closed with 1012 (service restart): the old leader's state for them is gone
///   or fenced, so the client reconnects and resumes on the new one. Requests waiting on the old
///   leader are answered 503.
/// - A request the leader leaves unanswered past ``requestTimeout`` is answered 504.
/// - A socket's `closed` reaches the leader it was relayed to, so the leader's hubs free it; a
///   socket cut off by ``reset()`` (same leader) is reported closed at once.
/// - Flow control: a socket's messages count against its inbound limit in this node's transport
///   until the leader's hubs handled them (``Output/handled``), so a client that sends faster
///   than the leader works is paused at its own socket, as on the leader. A leader of an older
///   build reports nothing; with it they count only until the bus took them.
public struct TunnelFront: Sendable {
    /// The leading node this one relays to, and the leadership's generation.
    public struct Leader: Sendable, Equatable, Hashable {
        public var node: String
        public var generation: Int64
        public init(node: String, generation: Int64) {
            self.node = node
            self.generation = generation
        }
    }

    /// What one step produced: a batch for the leader (empty when nothing to relay) and commands
    /// for this node's own transport.
    public struct Output: Sendable, Equatable {
        public var toLeader: (leader: Leader, batch: TunnelBatch)?
        public var local: [OutboundCommand] = []
        /// Messages the transport may count handled now.
        public var handled: [TransportEvent] = []
        /// Messages the transport may count handled once the bus took ``toLeader``'s batch.
        public var handledOnSend: [TransportEvent] = []

        public init() {}

        public static func == (lhs: Output, rhs: Output) -> Bool {
            lhs.toLeader?.leader == rhs.toLeader?.leader && lhs.toLeader?.batch == rhs.toLeader?.batch && lhs.local == rhs.local
                && lhs.handled == rhs.handled && lhs.handledOnSend == rhs.handledOnSend
        }
    }

    public private(set) var leader: Leader?
    /// Set while the leader's lease has lapsed and nobody took over yet: its sockets carry on,
    /// but new sockets and requests are refused as without a leader (it may be gone).
    public var paused = false
    /// Sockets relayed to ``leader``.
    public private(set) var sockets: Set<ConnectionID> = []
    /// Requests relayed to ``leader`` and their deadlines.
    public private(set) var pending: [ConnectionID: MonotonicTime] = [:]
    public let requestTimeout: Duration
    /// Whether ``leader`` reports the messages its hubs handled (``TunnelBatch/reports``).
    public private(set) var leaderReports = false
    /// Per socket, the messages relayed to a reporting leader and not yet reported handled, oldest first.
    private var unreported: [ConnectionID: Deque<TransportEvent>] = [:]

    public init(requestTimeout: Duration = .seconds(10)) {
        self.requestTimeout = requestTimeout
    }

    /// Relays `events` of this node's transport to the leader, or refuses them without one.
    public mutating func received(_ events: [TransportEvent], now: MonotonicTime) -> Output {
        var output = Output()
        var relayed: [TransportEvent] = []
        for event in events {
            switch event {
            case .opened(let id, _):
                guard leader != nil, !paused else {
                    output.local.append(.close(id, .tryAgainLater, reason: "no leading node is reachable"))
                    continue
                }
                sockets.insert(id)
                relayed.append(event)
            case .message(let id, _, _):
                guard sockets.contains(id) else {
                    output.handled.append(event)
                    continue
                }
                relayed.append(event)
                if leaderReports { unreported[id, default: []].append(event) } else { output.handledOnSend.append(event) }
            case .closed(let id):
                unreported[id] = nil
                if sockets.remove(id) != nil { relayed.append(event) }
            case .request(let id, _):
                guard leader != nil, !paused else {
                    output.local.append(.respond(id, SwitchboardError(.unavailable, "no leading node is reachable; try again").httpResponse))
                    continue
                }
                pending[id] = now.advanced(by: requestTimeout)
                relayed.append(event)
            }
        }
        if let leader, !relayed.isEmpty {
            output.toLeader = (leader, TunnelBatch(generation: leader.generation, events: relayed, reports: leaderReports))
        } else {
            output.handled += output.handledOnSend
            output.handledOnSend = []
        }
        return output
    }

    /// Follows `next` (`nil`: no live leader). A change cuts every socket and request off the
    /// old leader.
    public mutating func follow(_ next: Leader?) -> [OutboundCommand] {
        guard next != leader else { return [] }
        leader = next
        leaderReports = false
        unreported = [:]
        var commands: [OutboundCommand] = sockets.sorted().map { .close($0, .serviceRestart, reason: "the leading node changed; reconnect") }
        commands += pending.keys.sorted().map { .respond($0, SwitchboardError(.unavailable, "the leading node changed; try again").httpResponse) }
        sockets = []
        pending = [:]
        return commands
    }

    /// Cuts every socket and request off the leader as ``follow(_:)`` does on a change (this
    /// node's bus connection was lost, so messages may have been), tells the leader they closed,
    /// and keeps following it.
    public mutating func reset() -> Output {
        guard let current = leader else { return Output() }
        let closed = sockets.sorted().map { TransportEvent.closed($0) }
        var output = Output()
        output.local = follow(nil)
        leader = current
        if !closed.isEmpty { output.toLeader = (current, TunnelBatch(generation: current.generation, events: closed)) }
        return output
    }

    /// The leader's commands for this node's sockets (``Output/local``) and the messages it
    /// reports handled (``Output/handled``); a batch of another generation, or from a node that
    /// does not lead, is dropped.
    public mutating func fromLeader(_ batch: TunnelBatch, node: String) -> Output {
        guard let leader, leader.node == node, leader.generation == batch.generation else { return Output() }
        var output = Output()
        if batch.reports { leaderReports = true }
        for (id, count) in batch.handled.sorted(by: { $0.key < $1.key }) {
            guard var waiting = unreported[id] else { continue }
            let taken = min(count, waiting.count)
            output.handled += waiting.prefix(taken)
            waiting.removeFirst(taken)
            unreported[id] = waiting.isEmpty ? nil : waiting
        }
        output.local = batch.commands.filter { command in
            switch command {
            case .respond(let id, _):
                return pending.removeValue(forKey: id) != nil
            case .send(let id, _), .sendBinary(let id, _), .close(let id, _, _):
                return sockets.contains(id)
            }
        }
        return output
    }

    /// Answers 504 the requests the leader left unanswered past their deadline.
    public mutating func tick(now: MonotonicTime) -> [OutboundCommand] {
        let late = pending.filter { $0.value <= now }.keys.sorted()
        for id in late { pending[id] = nil }
        return late.map { .respond($0, Self.timedOut) }
    }

    static let timedOut: HTTPResponse = {
        var response = SwitchboardError(.unavailable, "the leading node did not answer in time").httpResponse
        response.status = 504
        return response
    }()
}
