import AsyncHTTPClient
import NIOCore
import SwitchboardCore

/// ``HTTPPoster`` over async-http-client: a maintained HTTP/1.1 and HTTP/2 client with TLS
/// certificate verification on, timeouts, and a connection pool, on its own event loops (never
/// the signaling or call queues).
///
/// Its client fails a request at once when the connection is refused (no retrying of the
/// connection until the deadline, async-http-client's default): a dead SFU answers "failed" in
/// milliseconds, and follows no redirects.
public struct AsyncHTTPPoster: HTTPPoster {
    let client: HTTPClient
    /// The largest answer read; a longer one is a failure, not a memory hazard.
    let maximumBody: Int

    /// A poster with a client of its own (``makeClient()``); call ``shutdown()`` when done.
    public init(maximumBody: Int = 4 << 20) {
        self.init(client: Self.makeClient(), maximumBody: maximumBody)
    }

    public init(client: HTTPClient, maximumBody: Int = 4 << 20) {
        self.client = client
        self.maximumBody = maximumBody
    }

    /// Closes the client's connections. Call from outside its event loops (the daemon's stop).
    public func shutdown() {
        try? client.syncShutdown()
    }

    /// A client for SFU adapters: connection refusals fail at once, no redirects.
    public static func makeClient() -> HTTPClient {
        var configuration = HTTPClient.Configuration(
            certificateVerification: .fullVerification, redirectConfiguration: .disallow,
            timeout: .init(connect: .seconds(10), read: .seconds(30)))
        configuration.connectionPool.retryConnectionEstablishment = false
        return HTTPClient(eventLoopGroup: HTTPClient.defaultEventLoopGroup, configuration: configuration)
    }

    public func post(_ url: String, body: [UInt8], timeout: Duration) async throws(HTTPPostError) -> (status: Int, body: [UInt8]) {
        var request = HTTPClientRequest(url: url)
        request.method = .POST
        request.headers.add(name: "Content-Type", value: "application/json")
        request.body = .bytes(ByteBuffer(bytes: body))
        let limit = TimeAmount.nanoseconds(Int64(clamping: timeout.components.seconds * 1_000_000_000 + timeout.components.attoseconds / 1_000_000_000))
        do {
            let response = try await client.execute(request, timeout: limit)
            let buffer = try await response.body.collect(upTo: maximumBody)
            return (Int(response.status.code), Array(buffer.readableBytesView))
        } catch let error as HTTPClientError where [.deadlineExceeded, .connectTimeout, .readTimeout].contains(error) {
            throw .timeout
        } catch {
            throw .failed(String(describing: error))
        }
    }
}
