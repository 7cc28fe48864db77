import CoreMetrics
import Dispatch
import Foundation
import Logging
import SwitchboardCore

/// The application's single owner of live signaling state.
///
/// Transport threads hand it batches of events; it hops to its serial `queue`, runs the pure
/// core (``PeerRelay``) and hands the resulting commands to the ``OutboundTransport`` in one
/// batch per hop.
///
/// Invariant behind `@unchecked Sendable`: every stored `var` is read and written only on
/// `queue` (checked with `dispatchPrecondition` at each entry point).
public final class SignalingHub: TransportEventSink, @unchecked Sendable {
    /// The serial queue that owns the relay.
    public let queue: DispatchQueue
    let routes: PeerJSRoutes
    let clock: any MonotonicClockSource
    let logger: Logger
    let newPeerID: @Sendable () -> String
    var relay: PeerRelay
    var transport: (any OutboundTransport)?
    var sweepTimer: (any DispatchSourceTimer)?
    var draining = false
    var adminHandler: (any AdminRequestHandler)?
    /// The client listener's own routes (static files, development tokens), asked before PeerJS's.
    var clientHandler: (any ClientRequestHandler)?
    let metrics: HubMetrics
    /// Verifies PeerJS tokens when `peerjs.auth = "jwt"`.
    var tokenVerifier: (any TokenVerifier)?
    /// Sockets whose token is being verified off the queue; a close removes them.
    var awaitingVerification: Set<ConnectionID> = []
    /// The call protocol, when `/v1/connect` is served.
    var calls: CallHub?
    /// Where call-protocol sockets connect.
    var connectPath = "/v1/connect"
    /// Open sockets on the call-protocol path.
    var callSockets: Set<ConnectionID> = []
    /// The test-only echo path (`testing.echo_path`), and its open sockets.
    var echoPath: String?
    var echoSockets: Set<ConnectionID> = []
    /// Caps on open sockets and connect rate per address, for both paths.
    var limiter = ConnectionLimiter(limits: ConnectionLimits())
    /// Sockets refused by a cap, until their close arrives: their frames are dropped.
    var refusedSockets: Set<ConnectionID> = []

    public init(
        relay configuration: RelayConfiguration,
        routes: PeerJSRoutes,
        clock: any MonotonicClockSource = SystemMonotonicClock(),
        newPeerID: @escaping @Sendable () -> String = { UUID().uuidString.lowercased() },
        metricsFactory: any MetricsFactory = NOOPMetricsHandler.instance,
        tokenVerifier: (any TokenVerifier)? = nil,
        logger: Logger
    ) {
        self.metrics = HubMetrics(factory: metricsFactory)
        self.tokenVerifier = tokenVerifier
        self.queue = DispatchQueue(label: "switchboard.signaling")
        self.relay = PeerRelay(configuration: configuration)
        self.routes = routes
        self.clock = clock
        self.newPeerID = newPeerID
        self.logger = logger
    }

    /// Connects the outbound side and starts the expiry and liveness sweep. Requests on the
    /// admin listener go to `admin` (404 when `nil`).
    public func start(
        transport: any OutboundTransport, admin: (any AdminRequestHandler)? = nil, client: (any ClientRequestHandler)? = nil,
        tokens: (any TokenVerifier)? = nil
    ) {
        queue.sync {
            self.transport = transport
            self.adminHandler = admin
            self.clientHandler = client
            if let tokens { self.tokenVerifier = tokens }
            // Started again (a daemon that served its own call sockets while it relayed, and
            // now leads): one sweep.
            sweepTimer?.cancel()
            let timer = DispatchSource.makeTimerSource(queue: queue)
            let interval = relay.configuration.sweepInterval
            timer.schedule(deadline: .now() + .milliseconds(Int(interval.milliseconds)), repeating: .milliseconds(Int(interval.milliseconds)))
            timer.setEventHandler { [weak self] in self?.sweep() }
            timer.resume()
            sweepTimer = timer
        }
    }

    /// Stops the sweep and detaches the transport.
    public func stop() {
        queue.sync {
            sweepTimer?.cancel()
            sweepTimer = nil
            transport = nil
            adminHandler = nil
        }
    }

    /// From now on new WebSockets are closed with 1001 right after they open.
    public func beginDraining() {
        queue.sync { draining = true }
    }

    /// Whether the hub refuses new sockets.
    public var isDraining: Bool { queue.sync { draining } }

    /// Closes the socket holding `id` (1000) and frees the id; `false` when not registered.
    public func disconnect(_ id: PeerID) -> Bool {
        queue.sync {
            var effects: [RelayEffect] = []
            let found = relay.disconnect(id, into: &effects)
            execute(effects, plus: [], now: clock.now())
            return found
        }
    }

    public func transportDidReceive(_ events: [TransportEvent]) {
        queue.async { self.process(events) }
    }

    /// Runs `body` on the queue with the relay, for inspection (admin API, tests).
    public func withRelay<T: Sendable>(_ body: @Sendable (PeerRelay) -> T) -> T {
        queue.sync { body(relay) }
    }

    /// Sets the connection caps (before the transport starts).
    public func limit(_ limits: ConnectionLimits) {
        queue.sync { limiter = ConnectionLimiter(limits: limits) }
    }

    /// Open sockets the limiter counts, in total and from `address`.
    public func openSockets(from address: String? = nil) -> Int {
        queue.sync { address.map(limiter.count(from:)) ?? limiter.openCount }
    }

    /// Serves the test-only echo protocol on `path`: every message comes back as it came
    /// (text or binary). For WebSocket conformance runs (Autobahn), never for production.
    public func enableEcho(path: String) {
        queue.sync { echoPath = path }
    }

    /// Serves the call protocol on `path` (same listener as PeerJS) through `calls`. The call
    /// hub runs on its own queue: the hub hands it each batch's call events in order and
    /// goes on relaying while the call hub commits.
    public func attach(calls: CallHub, path: String) {
        queue.sync {
            self.calls = calls
            self.connectPath = path
        }
    }

    func process(_ events: [TransportEvent]) {
        dispatchPrecondition(condition: .onQueue(queue))
        let started = DispatchTime.now()
        let now = clock.now()
        var effects: [RelayEffect] = []
        var responses: [OutboundCommand] = []
        let (peerEvents, callEvents) = partition(echoed(admitted(events, now: now, refusals: &responses), into: &responses))
        if !callEvents.isEmpty, let calls {
            // The call hub gives the inbound credit of its frames back once it handled them.
            calls.enqueue(callEvents)
        }
        for event in peerEvents {
            handle(event, now: now, effects: &effects, responses: &responses)
        }
        execute(effects, plus: responses, now: now)
        transport?.processed(callEvents.isEmpty ? events : Self.messages(of: events, notOn: callEvents))
        metrics.update(from: relay)
        metrics.batchDuration.recordNanoseconds(DispatchTime.now().uptimeNanoseconds - started.uptimeNanoseconds)
    }

    /// Drops sockets over a connection cap (closed with 1013) and their later events; counts
    /// closes out.
    private func admitted(_ events: [TransportEvent], now: MonotonicTime, refusals: inout [OutboundCommand]) -> [TransportEvent] {
        var kept: [TransportEvent] = []
        kept.reserveCapacity(events.count)
        for event in events {
            switch event {
            case .opened(let socket, let upgrade):
                if let refusal = limiter.admit(socket, from: upgrade.remoteAddress, now: now) {
                    refusedSockets.insert(socket)
                    metrics.recordRefusal(refusal)
                    refusals.append(.close(socket, .tryAgainLater, reason: refusal.rawValue))
                    continue
                }
            case .message(let socket, _, _) where refusedSockets.contains(socket):
                continue
            case .closed(let socket):
                limiter.release(socket)
                if refusedSockets.remove(socket) != nil { continue }
            default:
                break
            }
            kept.append(event)
        }
        return kept
    }

    /// Answers echo-path events (each message straight back) and returns the rest.
    private func echoed(_ events: [TransportEvent], into responses: inout [OutboundCommand]) -> [TransportEvent] {
        guard let echoPath else { return events }
        return events.filter { event in
            switch event {
            case .opened(let socket, let upgrade) where upgrade.path == echoPath:
                echoSockets.insert(socket)
            case .message(let socket, let bytes, let isBinary) where echoSockets.contains(socket):
                responses.append(isBinary ? .sendBinary(socket, bytes) : .send(socket, bytes))
            case .closed(let socket) where echoSockets.contains(socket):
                echoSockets.remove(socket)
            default:
                return true
            }
            return false
        }
    }

    /// The messages of `events` on sockets other than those of `callEvents` (a socket speaks
    /// one protocol, so its messages are all in one or the other).
    private static func messages(of events: [TransportEvent], notOn callEvents: [TransportEvent]) -> [TransportEvent] {
        var callSockets = Set<ConnectionID>()
        for case .message(let socket, _, _) in callEvents { callSockets.insert(socket) }
        return events.filter { event in
            guard case .message(let socket, _, _) = event else { return false }
            return !callSockets.contains(socket)
        }
    }

    /// Splits a batch into PeerJS events and call-protocol events, keeping each socket's order.
    private func partition(_ events: [TransportEvent]) -> (peer: [TransportEvent], call: [TransportEvent]) {
        guard calls != nil else { return (events, []) }
        var peer: [TransportEvent] = []
        var call: [TransportEvent] = []
        for event in events {
            switch event {
            case .opened(let socket, let upgrade) where upgrade.path == connectPath:
                if draining {
                    peer.append(event)
                } else {
                    callSockets.insert(socket)
                    call.append(event)
                }
            case .message(let socket, _, _) where callSockets.contains(socket):
                call.append(event)
            case .closed(let socket) where callSockets.contains(socket):
                callSockets.remove(socket)
                call.append(event)
            default:
                peer.append(event)
            }
        }
        return (peer, call)
    }

    private func handle(
        _ event: TransportEvent, now: MonotonicTime, effects: inout [RelayEffect], responses: inout [OutboundCommand]
    ) {
        switch event {
        case .opened(let connection, let upgrade):
            guard !draining else {
                responses.append(.close(connection, .goingAway, reason: "server is draining"))
                return
            }
            if relay.configuration.requireSignedIDs, let verifier = tokenVerifier, let token = upgrade.query["token"], !token.isEmpty {
                verify(token, for: connection, query: upgrade.query, with: verifier)
            } else {
                relay.connectionOpened(connection, query: upgrade.query, now: now, into: &effects)
            }
        case .message(let connection, let bytes, let isBinary):
            relay.frameReceived(connection, bytes, isBinary: isBinary, now: now, into: &effects)
        case .closed(let connection):
            awaitingVerification.remove(connection)
            relay.connectionClosed(connection)
        case .request(let connection, let request) where request.listener == .admin:
            answerAdmin(request, on: connection)
        case .request(let connection, let request) where clientHandler?.handles(request.path) == true:
            answerOffQueue(request, on: connection, with: clientHandler)
        case .request(let connection, let request):
            let response = routes.respond(to: request, relay: relay, newID: newPeerID)
                ?? SwitchboardError(.notFound, "no route for \(request.method) \(request.path)").httpResponse
            responses.append(.respond(connection, response))
        }
    }

    /// Checks a PeerJS token off the queue; the handshake continues on the queue with the
    /// verified user (or none), unless the socket closed meanwhile.
    private func verify(_ token: String, for connection: ConnectionID, query: [String: String], with verifier: any TokenVerifier) {
        awaitingVerification.insert(connection)
        Task {
            let verified = try? await verifier.verify(token)
            queue.async {
                guard self.awaitingVerification.remove(connection) != nil else { return }
                let now = self.clock.now()
                // The token's wall-clock expiry on the relay's monotonic clock.
                let expiresAt = verified.map { now.advanced(by: .milliseconds(Int64($0.expiresAt.timeIntervalSinceNow * 1000))) }
                var effects: [RelayEffect] = []
                self.relay.connectionOpened(connection, query: query, tokenSubject: verified?.userID, tokenExpiresAt: expiresAt, now: now, into: &effects)
                self.execute(effects, plus: [], now: now)
                self.metrics.update(from: self.relay)
            }
        }
    }

    /// Admin requests run off the signaling queue (they may wait on the store).
    private func answerAdmin(_ request: HTTPRequest, on connection: ConnectionID) {
        guard let transport else { return }
        guard let handler = adminHandler else {
            _ = transport.submit([.respond(connection, SwitchboardError(.notFound, "no admin API here").httpResponse)])
            return
        }
        DispatchQueue.global().async {
            _ = transport.submit([.respond(connection, handler.respond(to: request))])
        }
    }

    /// The client listener's own routes run off the signaling queue too (they read files and
    /// sign tokens).
    private func answerOffQueue(_ request: HTTPRequest, on connection: ConnectionID, with handler: (any ClientRequestHandler)?) {
        guard let transport, let handler else { return }
        DispatchQueue.global().async {
            _ = transport.submit([.respond(connection, handler.respond(to: request))])
        }
    }

    private func sweep() {
        dispatchPrecondition(condition: .onQueue(queue))
        let now = clock.now()
        var effects: [RelayEffect] = []
        relay.tick(now: now, into: &effects)
        limiter.prune(now: now)
        if !effects.isEmpty { execute(effects, plus: [], now: now) }
        metrics.update(from: relay)
    }

    /// Runs a sweep now (tests drive time with a manual clock).
    public func sweepNow() {
        queue.sync { sweep() }
    }

    /// Hands effects to the transport; refused deliveries are fed back to the relay, whose
    /// answers (LEAVE to the sender) go out in a second round.
    func execute(_ effects: [RelayEffect], plus extra: [OutboundCommand], now: MonotonicTime) {
        guard let transport else { return }
        var pending = effects
        var commands = extra
        for _ in 0..<4 {
            var receipts: [(ConnectionID, DeliveryReceipt)] = []
            for effect in pending {
                switch effect {
                case .send(let connection, let frame, let receipt):
                    commands.append(.send(connection, frame))
                    if let receipt { receipts.append((connection, receipt)) }
                case .close(let connection, let code, let reason):
                    commands.append(.close(connection, code, reason: reason))
                }
            }
            let refused = commands.isEmpty ? [] : transport.submit(commands)
            commands = []
            pending = []
            guard !refused.isEmpty else { return }
            for (connection, receipt) in receipts where refused.contains(connection) {
                logger.notice("outbox full, closing", metadata: ["conn.id": "\(connection)", "peer.id": "\(LogText.escape(receipt.destination.rawValue))"])
                relay.deliveryFailed(receipt, on: connection, now: now, into: &pending)
            }
        }
    }
}
