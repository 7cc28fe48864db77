import NIOCore
import NIOHTTP1
import NIOPosix
import Synchronization

/// A webhook receiver for the sender's tests: HTTP/1.1 on 127.0.0.1 at an ephemeral port,
/// recording each request and answering as the test's `answer` says.
final class WebhookTestServer: Sendable {
    /// One request as received.
    struct Request: Sendable {
        var method: HTTPMethod
        var uri: String
        var headers: HTTPHeaders
        var body: [UInt8]
    }

    /// What the server does with a request.
    enum Answer: Sendable {
        /// The status, extra headers and a body, then the end of the answer.
        case respond(Int, headers: [(String, String)] = [], body: [UInt8] = [])
        /// Nothing, ever (the connection stays open).
        case never
        /// Closes the connection as soon as the request's head arrives, before its body.
        case closeMidRequest
        /// The status and head of a long body, a little of it, and then nothing more.
        case stallInBody(Int)
    }

    /// The requests received, in order.
    private final class Log: Sendable {
        let requests = Mutex<[Request]>([])
        let connections = Mutex(0)
    }

    private let channel: any Channel
    private let log: Log
    /// The port the server listens on.
    let port: Int

    var requests: [Request] { log.requests.withLock { $0 } }
    /// Connections accepted so far.
    var connections: Int { log.connections.withLock { $0 } }

    func url(_ path: String) -> String { "http://127.0.0.1:\(port)\(path)" }

    /// Starts a server answering each request with `answer(request)`.
    static func start(answer: @escaping @Sendable (Request) -> Answer) async throws -> WebhookTestServer {
        let log = Log()
        let channel = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .childChannelInitializer { channel in
                log.connections.withLock { $0 += 1 }
                return channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.configureHTTPServerPipeline()
                    try channel.pipeline.syncOperations.addHandler(
                        Handler(answer: answer, record: { request in log.requests.withLock { $0.append(request) } }))
                }
            }
            .bind(host: "127.0.0.1", port: 0).get()
        guard let port = channel.localAddress?.port else { throw ChannelError.unknownLocalAddress }
        return WebhookTestServer(channel: channel, log: log, port: port)
    }

    private init(channel: any Channel, log: Log, port: Int) {
        self.channel = channel
        self.log = log
        self.port = port
    }

    /// Stops listening (connections the client keeps open close with the client).
    func stop() async throws {
        try await channel.close()
    }

    private final class Handler: ChannelInboundHandler {
        typealias InboundIn = HTTPServerRequestPart
        typealias OutboundOut = HTTPServerResponsePart

        let answer: @Sendable (Request) -> Answer
        let record: @Sendable (Request) -> Void
        var request: Request?

        init(answer: @escaping @Sendable (Request) -> Answer, record: @escaping @Sendable (Request) -> Void) {
            self.answer = answer
            self.record = record
        }

        func channelRead(context: ChannelHandlerContext, data: NIOAny) {
            switch unwrapInboundIn(data) {
            case .head(let head):
                let started = Request(method: head.method, uri: head.uri, headers: head.headers, body: [])
                request = started
                if case .closeMidRequest = answer(started) {
                    record(started)
                    request = nil
                    context.close(promise: nil)
                }
            case .body(let buffer):
                request?.body += Array(buffer.readableBytesView)
            case .end:
                guard let request else { return }
                self.request = nil
                record(request)
                respond(answer(request), context: context)
            }
        }

        private func respond(_ answer: Answer, context: ChannelHandlerContext) {
            switch answer {
            case .respond(let status, let extra, var body):
                var headers = HTTPHeaders(extra)
                if status == 204 || status == 304 { body = [] } else { headers.add(name: "content-length", value: String(body.count)) }
                writeHead(status, headers, context: context)
                if !body.isEmpty { context.write(wrapOutboundOut(.body(.byteBuffer(ByteBuffer(bytes: body)))), promise: nil) }
                context.writeAndFlush(wrapOutboundOut(.end(nil)), promise: nil)
            case .stallInBody(let status):
                writeHead(status, HTTPHeaders([("content-length", "100000")]), context: context)
                let some = ByteBuffer(bytes: Array(repeating: UInt8(ascii: "x"), count: 100))
                context.writeAndFlush(wrapOutboundOut(.body(.byteBuffer(some))), promise: nil)
            case .never, .closeMidRequest:
                break
            }
        }

        private func writeHead(_ status: Int, _ headers: HTTPHeaders, context: ChannelHandlerContext) {
            let head = HTTPResponseHead(version: .http1_1, status: .init(statusCode: status), headers: headers)
            context.write(wrapOutboundOut(.head(head)), promise: nil)
        }
    }
}

/// The servers one test started, stopped together in its `tearDown`.
final class WebhookTestServers {
    private var started: [WebhookTestServer] = []

    /// A server answering each request with `answer(request)`.
    func start(_ answer: @escaping @Sendable (WebhookTestServer.Request) -> WebhookTestServer.Answer) async throws -> WebhookTestServer {
        let server = try await WebhookTestServer.start(answer: answer)
        started.append(server)
        return server
    }

    func stopAll() async throws {
        for server in started { try await server.stop() }
        started = []
    }
}
