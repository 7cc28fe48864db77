import Foundation

/// A wall clock that only moves when a test advances it; it starts at the current time
/// rounded to milliseconds, so tokens minted against the real clock are valid on it.
public final class ManualWallClock: @unchecked Sendable {
    private let lock = NSLock()
    private var current: Date

    public init(start: Date = Date(timeIntervalSince1970: (Date().timeIntervalSince1970 * 1000).rounded() / 1000)) { current = start }

    public func now() -> Date { lock.withLock { current } }

    /// Moves the clock forward.
    public func advance(by duration: Duration) {
        lock.withLock { current = current.addingTimeInterval(Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18) }
    }
}
