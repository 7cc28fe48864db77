import AsyncHTTPClient
import NIOCore
import SwitchboardCore

/// ``HTTPPoster`` over async-http-client: a maintained HTTP/1.1 and HTTP/2 client with TLS
/// certificate verification on, timeouts, and a connection pool, on its own event loops (never
/// the signaling or call queues).
public struct AsyncHTTPPoster: HTTPPoster {
    let client: HTTPClient
    /// The largest answer read; a longer one is a failure, not a memory hazard.
    let maximumBody: Int

    public init(client: HTTPClient = .shared, maximumBody: Int = 4 << 20) {
        self.client = client
        self.maximumBody = maximumBody
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
