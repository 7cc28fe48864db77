import CLibWebSockets
import CSwitchboardShims
import Foundation
import Logging
import Synchronization
import SwitchboardCore

/// One libwebsockets context on its own thread, with an epoll-backed libev loop and its own
/// SO_REUSEPORT listening socket.
///
/// Everything but the ``mailbox`` is confined to the thread that runs ``run()``: lws state,
/// the connection table and the inbound batch. Only that thread calls lws, except
/// `lws_cancel_service`, which the mailbox calls to wake it.
final class ServiceThread: @unchecked Sendable {
    let index: Int
    let configuration: TransportConfiguration
    let mailbox: Mailbox
    let logger: Logger
    let onClose: (@Sendable (CloseCode) -> Void)?
    private weak var sink: (any TransportEventSink)?

    let listeners: [BoundListener]
    private var context: OpaquePointer?
    private var loop: OpaquePointer?
    private var protocols: UnsafeMutablePointer<lws_protocols>?
    private var retryPolicy: UnsafeMutablePointer<lws_retry_bo_t>?
    private var foreignLoops: UnsafeMutablePointer<UnsafeMutableRawPointer?>?
    /// C strings lws keeps pointers to for as long as the context lives (vhost names, ALPN).
    private var ownedCStrings: [UnsafeMutablePointer<CChar>] = []

    var connections: [ConnectionID: LWSConnection] = [:]
    var connectionsByWSI: [OpaquePointer: LWSConnection] = [:]
    var inbound: [TransportEvent] = []
    private var nextSerial: UInt64 = 1
    var writeBuffer = WriteBuffer()
    private let finished = DispatchSemaphore(value: 0)

    // Connection deadlines: our own wheel, so lws's sorted timer list stays short (ADR 0007).
    let timeouts: ConnectionTimer.Timeouts
    var timers: TimerWheel<ConnectionID>
    private var tickTimer: UnsafeMutableRawPointer?
    let gate: AddressGate
    /// A descriptor held back for when accept(2) runs out of them (EMFILE/ENFILE).
    var reserveDescriptor: Int32 = -1
    var acceptFailures = RateLimitedCount(every: .seconds(10))
    /// Partly received messages over all threads.
    let partialMessages: PartialMessageBudget
    /// When the loop last turned (monotonic nanoseconds), read by the watchdog from any thread.
    let lastTurn = Atomic<Int64>(0)

    /// How often the loop turns at the least, and the wheel's resolution.
    static let tick: Duration = .milliseconds(100)

    init(
        index: Int, listeners: [BoundListener], configuration: TransportConfiguration, gate: AddressGate, partialMessages: PartialMessageBudget,
        sink: any TransportEventSink,
        logger: Logger, onClose: (@Sendable (CloseCode) -> Void)? = nil
    ) {
        self.index = index
        self.onClose = onClose
        self.listeners = listeners
        self.configuration = configuration
        self.gate = gate
        self.partialMessages = partialMessages
        self.mailbox = Mailbox(outboxLimit: configuration.outboxBytes, inboundLimit: configuration.inboundBytes)
        self.sink = sink
        self.timeouts = ConnectionTimer.Timeouts(handshake: configuration.handshakeTimeout, ping: configuration.pingInterval)
        self.timers = TimerWheel(tick: Self.tick, start: Self.now())
        var logger = logger
        logger[metadataKey: "lws.thread"] = "\(index)"
        self.logger = logger
        lastTurn.store(Self.now().nanoseconds, ordering: .relaxed)
    }

    /// The monotonic clock the transport's deadlines run on.
    static func now() -> MonotonicTime {
        MonotonicTime(nanoseconds: Int64(clamping: DispatchTime.now().uptimeNanoseconds))
    }

    /// Starts the thread; returns once the context is created (or failed to be).
    func start() throws {
        let ready = DispatchSemaphore(value: 0)
        let failure = StartupFailure()
        let thread = Thread { [self] in
            do { try createContext() } catch {
                failure.error = error as? TransportError ?? TransportError("\(error)")
                ready.signal()
                finished.signal()
                return
            }
            ready.signal()
            run()
        }
        thread.name = "lws-\(index)"
        thread.stackSize = 1 << 20
        thread.start()
        ready.wait()
        if let error = failure.error { throw error }
    }

    /// Blocks until the thread has destroyed its context, or `deadline` passes; returns whether
    /// it finished.
    func waitUntilFinished(until deadline: DispatchTime) -> Bool {
        finished.wait(timeout: deadline) == .success
    }

    func allocateID() -> ConnectionID {
        defer { nextSerial += 1 }
        return ConnectionID(thread: index, serial: nextSerial)
    }

    private func run() {
        var nextTick = Self.now()
        while true {
            sb_ev_run_once(loop)
            let now = Self.now()
            lastTurn.store(now.nanoseconds, ordering: .relaxed)
            if now >= nextTick {
                runTimers(now)
                nextTick = now.advanced(by: Self.tick)
            }
            if !inbound.isEmpty {
                let batch = inbound
                inbound = []
                inbound.reserveCapacity(batch.count)
                sink?.transportDidReceive(batch)
            }
            if mailbox.stopRequested { break }
        }
        destroyContext()
        finished.signal()
    }

    private func createContext() throws {
        guard let loop = sb_ev_loop_new() else { throw TransportError("cannot create an epoll event loop") }
        self.loop = loop
        let loops = UnsafeMutablePointer<UnsafeMutableRawPointer?>.allocate(capacity: 1)
        loops.initialize(to: UnsafeMutableRawPointer(loop))
        foreignLoops = loops

        var info = lws_context_creation_info()
        info.options = UInt64(LWS_SERVER_OPTION_LIBEV) | UInt64(LWS_SERVER_OPTION_EXPLICIT_VHOSTS)
            | UInt64(LWS_SERVER_OPTION_VALIDATE_UTF8)
        if listeners.contains(where: { $0.configuration.usesTLS }) { info.options |= UInt64(LWS_SERVER_OPTION_DO_SSL_GLOBAL_INIT) }
        info.foreign_loops = loops
        info.user = Unmanaged.passUnretained(self).toOpaque()
        info.timeout_secs = UInt32(max(1, configuration.handshakeTimeout.milliseconds / 1000))
        info.max_http_header_pool = 256
        guard let context = lws_create_context(&info) else {
            throw TransportError("libwebsockets could not create a context (is libwebsockets-evlib-ev installed?)")
        }
        self.context = context
        createSharedTables()
        for listener in listeners {
            try createVHost(context, for: listener)
            try adopt(listener)
        }
        mailbox.setWake { lws_cancel_service(context) }
        tickTimer = sb_ev_tick_start(loop, Double(Self.tick.milliseconds) / 1000)
        let reserve = sb_open_reserve()
        reserveDescriptor = reserve >= 0 ? reserve : -1
    }

    private func createSharedTables() {
        let protocols = UnsafeMutablePointer<lws_protocols>.allocate(capacity: 2)
        protocols.initialize(repeating: lws_protocols(), count: 2)
        protocols[0].name = UnsafePointer(strdup("switchboard"))
        protocols[0].callback = switchboardLWSCallback
        protocols[0].rx_buffer_size = 4096
        self.protocols = protocols

        let retry = UnsafeMutablePointer<lws_retry_bo_t>.allocate(capacity: 1)
        // No validity timers from lws: a hang-up of 0 turns them off (lws keeps them in one sorted
        // list per thread, an O(n) insert per socket per round). Pings are ours (runTimers).
        retry.initialize(to: lws_retry_bo_t(
            retry_ms_table: nil, retry_ms_table_count: 0, conceal_count: 0,
            secs_since_valid_ping: 0, secs_since_valid_hangup: 0, jitter_percent: 0))
        self.retryPolicy = retry
    }

    /// One vhost per listener. A context must not hold two listeners' vhosts: lws re-binds an
    /// HTTP connection to the first vhost whose port and Host match, so each listener that is
    /// not on every thread gets a service thread of its own.
    private func createVHost(_ context: OpaquePointer, for listener: BoundListener) throws {
        var info = lws_context_creation_info()
        info.port = CONTEXT_PORT_NO_LISTEN_SERVER
        info.protocols = UnsafePointer(protocols)
        info.retry_and_idle_policy = UnsafePointer(retryPolicy)
        // A method lws does not know: the connection comes to us raw (handleRawRequest)
        // instead of being answered 403 by lws.
        info.options = UInt64(LWS_SERVER_OPTION_VALIDATE_UTF8) | UInt64(LWS_SERVER_OPTION_FALLBACK_TO_APPLY_LISTEN_ACCEPT_CONFIG)
        // Vhost fields: without them a connection that never finishes its request holds a
        // header buffer for lws's defaults (10 s idle, longer before any byte).
        let handshake = UInt32(max(1, configuration.handshakeTimeout.milliseconds / 1000))
        info.timeout_secs = handshake
        info.timeout_secs_ah_idle = handshake
        let name = strdup("\(listener.role.rawValue)-\(index)")!
        ownedCStrings.append(name)
        info.vhost_name = UnsafePointer(name)
        var certificate: UnsafeMutablePointer<CChar>?
        var privateKey: UnsafeMutablePointer<CChar>?
        defer {
            free(certificate)
            free(privateKey)
        }
        if let cert = listener.configuration.tlsCertificateFile, let key = listener.configuration.tlsPrivateKeyFile {
            certificate = strdup(cert)
            privateKey = strdup(key)
            info.ssl_cert_filepath = UnsafePointer(certificate)
            info.ssl_private_key_filepath = UnsafePointer(privateKey)
            info.options |= UInt64(LWS_SERVER_OPTION_DO_SSL_GLOBAL_INIT)
            let alpn = strdup("http/1.1")!  // lws keeps the pointer, not a copy
            ownedCStrings.append(alpn)
            info.alpn = UnsafePointer(alpn)
        }
        guard let vhost = lws_create_vhost(context, &info) else {
            throw TransportError("libwebsockets could not create the \(listener.role.rawValue) vhost (check the TLS certificate and key)")
        }
        listener.vhost = vhost
    }

    private func adopt(_ listener: BoundListener) throws {
        var descriptor = lws_sock_file_fd_type()
        descriptor.filefd = listener.fd
        guard let wsi = lws_adopt_descriptor_vhost(listener.vhost, LWS_ADOPT_RAW_FILE_DESC, descriptor, "switchboard", nil) else {
            throw TransportError("libwebsockets could not adopt the \(listener.role.rawValue) listening socket")
        }
        listener.wsi = wsi
    }

    private func destroyContext() {
        mailbox.setWake(nil)
        if let loop { sb_ev_tick_stop(loop, tickTimer) }
        tickTimer = nil
        if reserveDescriptor >= 0 { _ = sb_close(reserveDescriptor) }
        reserveDescriptor = -1
        if let context { lws_context_destroy(context) }
        context = nil
        if let loop { sb_ev_loop_destroy(loop) }
        loop = nil
        if let protocols {
            free(UnsafeMutableRawPointer(mutating: protocols[0].name))
            protocols.deallocate()
        }
        retryPolicy?.deallocate()
        foreignLoops?.deallocate()
        for string in ownedCStrings { free(string) }
        ownedCStrings = []
        for listener in listeners where listener.vhost == nil { _ = sb_close(listener.fd) }
    }

    /// The dispatcher for every lws callback on this thread.
    func handle(
        wsi: OpaquePointer, reason: lws_callback_reasons, user: UnsafeMutableRawPointer?,
        input: UnsafeMutableRawPointer?, length: Int
    ) -> Int32 {
        switch reason {
        case LWS_CALLBACK_EVENT_WAIT_CANCELLED:
            executeMailbox()
            return 0
        case LWS_CALLBACK_RAW_RX_FILE:
            if let listener = listeners.first(where: { $0.wsi == wsi }) { acceptPending(listener) }
            return 0
        case LWS_CALLBACK_RAW_CLOSE_FILE:
            listeners.first { $0.wsi == wsi }?.wsi = nil
            return 0
        case LWS_CALLBACK_FILTER_PROTOCOL_CONNECTION, LWS_CALLBACK_ESTABLISHED, LWS_CALLBACK_RECEIVE,
            LWS_CALLBACK_RECEIVE_PONG, LWS_CALLBACK_WS_PEER_INITIATED_CLOSE, LWS_CALLBACK_SERVER_WRITEABLE, LWS_CALLBACK_CLOSED:
            return handleWebSocket(wsi: wsi, reason: reason, input: input, length: length)
        case LWS_CALLBACK_RAW_ADOPT, LWS_CALLBACK_RAW_RX, LWS_CALLBACK_RAW_WRITEABLE:
            // A request lws turns into a raw socket (an unknown method, CONNECT).
            return handleRawRequest(wsi: wsi, reason: reason, input: input, length: length)
        case LWS_CALLBACK_HTTP, LWS_CALLBACK_HTTP_BODY, LWS_CALLBACK_HTTP_BODY_COMPLETION,
            LWS_CALLBACK_HTTP_WRITEABLE, LWS_CALLBACK_CLOSED_HTTP, LWS_CALLBACK_HTTP_CONFIRM_UPGRADE:
            return handleHTTP(wsi: wsi, reason: reason, input: input, length: length)
        case LWS_CALLBACK_WSI_DESTROY:
            forget(wsi: wsi)
            return 0
        default:
            return lws_callback_http_dummy(wsi, reason, user, input, length)
        }
    }

    /// The connection record for `wsi`, created on first sight (accepted sockets are recorded
    /// at accept; this covers any other wsi lws shows us). Every record has a deadline.
    func connection(for wsi: OpaquePointer) -> LWSConnection {
        if let existing = connectionsByWSI[wsi] { return existing }
        return record(wsi, listener: listeners[0].configuration, address: LWSHeaders.peerAddress(wsi))
    }

    @discardableResult
    func record(_ wsi: OpaquePointer, listener: ListenerConfiguration, address: String) -> LWSConnection {
        let now = Self.now()
        let connection = LWSConnection(
            id: allocateID(), wsi: wsi, listener: listener, remoteAddress: address,
            timer: ConnectionTimer(acceptedAt: now, timeouts: timeouts))
        connectionsByWSI[wsi] = connection
        connections[connection.id] = connection
        timers.schedule(connection.id, at: connection.timer.deadline)
        return connection
    }

    private func forget(wsi: OpaquePointer) {
        guard let connection = connectionsByWSI.removeValue(forKey: wsi) else { return }
        connections[connection.id] = nil
        partialMessages.release(connection.dropPartialMessage())
        if connection.counted {
            gate.released(connection.listener.role, connection.remoteAddress, pending: connection.timer.isPending)
        }
    }
}

/// Carries a start-up error from the service thread to the caller, which reads it only after
/// the thread has signalled.
private final class StartupFailure: @unchecked Sendable {
    var error: TransportError?
}
