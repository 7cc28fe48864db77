import Foundation
import SwitchboardApp
import SwitchboardCore

/// The time and id sources the daemon hands to every component it builds (the signaling hub,
/// the call hub, the SFU directory, the admin API's audit log). ``system`` is what
/// `switchboard serve` runs; tests pass a clock they move by hand. The transport's own timers
/// (handshake, ping, its timer wheel) always run on real time.
public struct DaemonClocks: Sendable {
    /// Wall-clock time: call deadlines and stored times (rounded to milliseconds for the call
    /// hub), SFU heartbeats and placements, audit entries.
    public var wall: @Sendable () -> Date
    /// Monotonic time: PeerJS expiry and liveness, SFU staleness.
    public var monotonic: any MonotonicClockSource
    /// New peer, connection and session ids: time-ordered UUIDs (version 7) by default.
    public var newID: @Sendable () -> String

    public init(
        wall: @escaping @Sendable () -> Date = { Date() }, monotonic: any MonotonicClockSource = SystemMonotonicClock(),
        newID: @escaping @Sendable () -> String = DaemonClocks.timeOrderedID
    ) {
        self.wall = wall
        self.monotonic = monotonic
        self.newID = newID
    }

    /// A version 7 UUID from the real clock and the system's random numbers.
    @Sendable public static func timeOrderedID() -> String {
        var random = SystemRandomNumberGenerator()
        let milliseconds = UInt64(max(0, Date().timeIntervalSince1970 * 1000))
        return TimeOrderedID.make(milliseconds: milliseconds, random: (random.next(), random.next()))
    }

    /// The real clocks and time-ordered UUIDs.
    public static let system = DaemonClocks()
}
