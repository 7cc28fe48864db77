import CLibWebSockets

/// A reusable, growable buffer with `LWS_PRE` bytes of headroom, as `lws_write` requires.
struct WriteBuffer: ~Copyable {
    private var storage: UnsafeMutableRawPointer
    private var capacity: Int
    private let headroom = sb_lws_pre()

    init() {
        capacity = 16 * 1024
        storage = .allocate(byteCount: capacity + headroom, alignment: 16)
    }

    deinit { storage.deallocate() }

    /// Copies `bytes` after the headroom and returns a pointer to them.
    mutating func stage(_ bytes: some Collection<UInt8>) -> UnsafeMutablePointer<UInt8> {
        if bytes.count > capacity {
            storage.deallocate()
            capacity = max(bytes.count, capacity * 2)
            storage = .allocate(byteCount: capacity + headroom, alignment: 16)
        }
        let start = (storage + headroom).assumingMemoryBound(to: UInt8.self)
        _ = UnsafeMutableBufferPointer(start: start, count: bytes.count).initialize(from: bytes)
        return start
    }

    /// The payload area (after the headroom), `capacity` bytes long, for building headers.
    mutating func payloadArea(atLeast count: Int) -> (start: UnsafeMutablePointer<UInt8>, end: UnsafeMutablePointer<UInt8>) {
        if count > capacity {
            storage.deallocate()
            capacity = max(count, capacity * 2)
            storage = .allocate(byteCount: capacity + headroom, alignment: 16)
        }
        let start = (storage + headroom).assumingMemoryBound(to: UInt8.self)
        return (start, start + capacity - 1)
    }
}
