import CSwitchboardShims

/// A blocking TCP client socket with a receive timeout, for tests, benchmarks and tools.
/// Not used by the daemon itself.
public final class BlockingSocket: @unchecked Sendable {
    private var fd: Int32

    /// Connects to `host:port`.
    public init(host: String, port: Int) throws {
        let result = sb_connect_tcp(host, Int32(port))
        guard result >= 0 else { throw TransportError("connect to \(host):\(port) failed: \(String(cString: sb_strerror(-result)))") }
        fd = result
    }

    deinit { close() }

    /// Sends every byte.
    public func send(_ bytes: [UInt8]) throws {
        let result = bytes.withUnsafeBytes { sb_send_all(fd, $0.baseAddress, $0.count) }
        guard result == 0 else { throw TransportError("send failed: \(String(cString: sb_strerror(-result)))") }
    }

    /// Receives up to `maximum` bytes, waiting at most `timeout`. Returns `[]` at end of stream;
    /// throws on timeout or error.
    public func receive(maximum: Int = 65536, timeout: Duration) throws -> [UInt8] {
        _ = sb_set_recv_timeout(fd, Int32(max(1, timeout.milliseconds)))
        var buffer = [UInt8](repeating: 0, count: maximum)
        let count = buffer.withUnsafeMutableBytes { sb_recv(fd, $0.baseAddress, $0.count) }
        if count < 0 {
            if count == -Int(EAGAIN_VALUE) { throw TransportError("receive timed out after \(timeout)") }
            throw TransportError("receive failed: \(String(cString: sb_strerror(Int32(-count))))")
        }
        return Array(buffer.prefix(count))
    }

    /// Closes the socket. Idempotent.
    public func close() {
        if fd >= 0 { _ = sb_close(fd) }
        fd = -1
    }
}

/// `EAGAIN` on Linux (also `EWOULDBLOCK`), returned when a receive times out.
private let EAGAIN_VALUE: Int32 = 11
