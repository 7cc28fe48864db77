import CLibWebSockets
import CSwitchboardShims
import Foundation
import Logging
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
    private weak var sink: (any TransportEventSink)?

    private let listenFD: Int32
    private var context: OpaquePointer?
    private var loop: OpaquePointer?
    private var vhost: OpaquePointer?
    private var protocols: UnsafeMutablePointer<lws_protocols>?
    private var retryPolicy: UnsafeMutablePointer<lws_retry_bo_t>?
    private var foreignLoops: UnsafeMutablePointer<UnsafeMutableRawPointer?>?
    var listener: OpaquePointer?

    var connections: [ConnectionID: LWSConnection] = [:]
    var connectionsByWSI: [OpaquePointer: LWSConnection] = [:]
    var inbound: [TransportEvent] = []
    private var nextSerial: UInt64 = 1
    var writeBuffer = WriteBuffer()
    private let finished = DispatchSemaphore(value: 0)

    init(index: Int, listenFD: Int32, configuration: TransportConfiguration, sink: any TransportEventSink, logger: Logger) {
        self.index = index
        self.listenFD = listenFD
        self.configuration = configuration
        self.mailbox = Mailbox(outboxLimit: configuration.outboxBytes)
        self.sink = sink
        var logger = logger
        logger[metadataKey: "lws.thread"] = "\(index)"
        self.logger = logger
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

    /// Blocks until the thread has destroyed its context.
    func waitUntilFinished() { finished.wait() }

    func allocateID() -> ConnectionID {
        defer { nextSerial += 1 }
        return ConnectionID(thread: index, serial: nextSerial)
    }

    private func run() {
        while true {
            sb_ev_run_once(loop)
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
        if configuration.usesTLS { info.options |= UInt64(LWS_SERVER_OPTION_DO_SSL_GLOBAL_INIT) }
        info.foreign_loops = loops
        info.user = Unmanaged.passUnretained(self).toOpaque()
        info.timeout_secs = UInt32(max(1, configuration.handshakeTimeout.milliseconds / 1000))
        info.max_http_header_pool = 64
        guard let context = lws_create_context(&info) else {
            throw TransportError("libwebsockets could not create a context (is libwebsockets-evlib-ev installed?)")
        }
        self.context = context
        try createVHost(context)
        try adoptListener()
        mailbox.setWake { lws_cancel_service(context) }
    }

    private func createVHost(_ context: OpaquePointer) throws {
        let protocols = UnsafeMutablePointer<lws_protocols>.allocate(capacity: 2)
        protocols.initialize(repeating: lws_protocols(), count: 2)
        protocols[0].name = UnsafePointer(strdup("switchboard"))
        protocols[0].callback = switchboardLWSCallback
        protocols[0].rx_buffer_size = 4096
        self.protocols = protocols

        let retry = UnsafeMutablePointer<lws_retry_bo_t>.allocate(capacity: 1)
        let ping = UInt16(clamping: max(1, configuration.pingInterval.milliseconds / 1000))
        retry.initialize(to: lws_retry_bo_t(
            retry_ms_table: nil, retry_ms_table_count: 0, conceal_count: 0,
            secs_since_valid_ping: ping, secs_since_valid_hangup: ping &* 2, jitter_percent: 0))
        self.retryPolicy = retry

        var info = lws_context_creation_info()
        info.port = CONTEXT_PORT_NO_LISTEN_SERVER
        info.protocols = UnsafePointer(protocols)
        info.retry_and_idle_policy = UnsafePointer(retry)
        info.options = UInt64(LWS_SERVER_OPTION_VALIDATE_UTF8)
        let name = strdup("switchboard-\(index)")
        defer { free(name) }
        info.vhost_name = UnsafePointer(name)
        var certificate: UnsafeMutablePointer<CChar>?
        var privateKey: UnsafeMutablePointer<CChar>?
        defer {
            free(certificate)
            free(privateKey)
        }
        if let cert = configuration.tlsCertificateFile, let key = configuration.tlsPrivateKeyFile {
            certificate = strdup(cert)
            privateKey = strdup(key)
            info.ssl_cert_filepath = UnsafePointer(certificate)
            info.ssl_private_key_filepath = UnsafePointer(privateKey)
            info.options |= UInt64(LWS_SERVER_OPTION_DO_SSL_GLOBAL_INIT)
            info.alpn = UnsafePointer(strdup("http/1.1"))
        }
        guard let vhost = lws_create_vhost(context, &info) else {
            throw TransportError("libwebsockets could not create the vhost (check the TLS certificate and key)")
        }
        self.vhost = vhost
    }

    private func adoptListener() throws {
        var descriptor = lws_sock_file_fd_type()
        descriptor.filefd = listenFD
        guard let wsi = lws_adopt_descriptor_vhost(vhost, LWS_ADOPT_RAW_FILE_DESC, descriptor, "switchboard", nil) else {
            throw TransportError("libwebsockets could not adopt the listening socket")
        }
        listener = wsi
    }

    private func destroyContext() {
        mailbox.setWake(nil)
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
        if listener == nil { _ = sb_close(listenFD) }
    }

    /// Accepts every pending connection on the listening socket and hands it to lws.
    func acceptPending() {
        while true {
            let fd = sb_accept(listenFD)
            if fd < 0 {
                if fd != -EAGAIN && fd != -EWOULDBLOCK && fd != -EINTR {
                    logger.warning("accept failed", metadata: ["errno": "\(-fd)"])
                }
                return
            }
            if lws_adopt_socket_vhost(vhost, fd) == nil {
                logger.warning("libwebsockets refused an accepted socket")
            }
        }
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
        case LWS_CALLBACK_RAW_RX_FILE where wsi == listener:
            acceptPending()
            return 0
        case LWS_CALLBACK_RAW_CLOSE_FILE where wsi == listener:
            listener = nil
            return 0
        case LWS_CALLBACK_FILTER_PROTOCOL_CONNECTION, LWS_CALLBACK_ESTABLISHED, LWS_CALLBACK_RECEIVE,
            LWS_CALLBACK_SERVER_WRITEABLE, LWS_CALLBACK_CLOSED:
            return handleWebSocket(wsi: wsi, reason: reason, input: input, length: length)
        case LWS_CALLBACK_HTTP, LWS_CALLBACK_HTTP_BODY, LWS_CALLBACK_HTTP_BODY_COMPLETION,
            LWS_CALLBACK_HTTP_WRITEABLE, LWS_CALLBACK_CLOSED_HTTP:
            return handleHTTP(wsi: wsi, reason: reason, input: input, length: length)
        case LWS_CALLBACK_WSI_DESTROY:
            forget(wsi: wsi)
            return 0
        default:
            return lws_callback_http_dummy(wsi, reason, user, input, length)
        }
    }

    /// The connection record for `wsi`, created on first sight.
    func connection(for wsi: OpaquePointer) -> LWSConnection {
        if let existing = connectionsByWSI[wsi] { return existing }
        let connection = LWSConnection(id: allocateID(), wsi: wsi, remoteAddress: LWSHeaders.peerAddress(wsi))
        connectionsByWSI[wsi] = connection
        connections[connection.id] = connection
        return connection
    }

    private func forget(wsi: OpaquePointer) {
        guard let connection = connectionsByWSI.removeValue(forKey: wsi) else { return }
        connections[connection.id] = nil
    }
}

/// Carries a start-up error from the service thread to the caller, which reads it only after
/// the thread has signalled.
private final class StartupFailure: @unchecked Sendable {
    var error: TransportError?
}
