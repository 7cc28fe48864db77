import Foundation

/// Who is the dominant speaker of a call, with hysteresis: the loudest speaking participant
/// takes over at once when nobody holds the floor or the holder stopped speaking, and only
/// after holding the lead for ``CallConfiguration/dominantSpeakerHold`` while the holder still
/// speaks.
public struct DominantSpeaker: Sendable, Equatable {
    public private(set) var current: SessionID?
    /// The loudest challenger and since when it has led.
    var challenger: (session: SessionID, since: Date)?

    public init(current: SessionID? = nil) {
        self.current = current
    }

    public static func == (lhs: Self, rhs: Self) -> Bool {
        lhs.current == rhs.current && lhs.challenger?.session == rhs.challenger?.session && lhs.challenger?.since == rhs.challenger?.since
    }

    /// Re-evaluates after a media change or a leave; returns `true` when the dominant speaker
    /// changed.
    public mutating func update(sessions: [SessionID: SessionRecord], now: Date, hold: Duration) -> Bool {
        let before = current
        let loudest = sessions.values.filter(\.media.speaking).max { lhs, rhs in
            lhs.media.audioLevel == rhs.media.audioLevel ? lhs.sessionID > rhs.sessionID : lhs.media.audioLevel < rhs.media.audioLevel
        }
        if let holder = current, sessions[holder] == nil { current = nil }
        guard let loudest else {
            challenger = nil
            return current != before
        }
        if let holder = current, let holding = sessions[holder], holding.media.speaking, holder != loudest.sessionID {
            if challenger?.session != loudest.sessionID { challenger = (loudest.sessionID, now) }
            if let since = challenger?.since, now.timeIntervalSince(since) >= hold.seconds {
                current = loudest.sessionID
                challenger = nil
            }
        } else {
            current = loudest.sessionID
            challenger = nil
        }
        return current != before
    }
}

extension Duration {
    /// The duration in seconds, as a `Double`.
    public var seconds: Double {
        let (seconds, attoseconds) = components
        return Double(seconds) + Double(attoseconds) / 1e18
    }
}
