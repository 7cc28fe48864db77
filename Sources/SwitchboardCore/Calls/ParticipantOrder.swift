/// The default participant order, as Stream Video's SDK sorts by default: pinned,
/// screensharing, dominant speaker, speaking, publishing video, publishing audio, then user
/// id (and session id, so the order is total).
public enum ParticipantOrder {
    public static func sorted(_ sessions: [SessionRecord], dominant: SessionID?) -> [SessionRecord] {
        sessions.sorted { precedes($0, $1, dominant: dominant) }
    }

    /// Whether `lhs` comes before `rhs`.
    public static func precedes(_ lhs: SessionRecord, _ rhs: SessionRecord, dominant: SessionID?) -> Bool {
        let left = rank(lhs, dominant: dominant)
        let right = rank(rhs, dominant: dominant)
        if left != right { return left.lexicographicallyPrecedes(right) }
        if lhs.userID != rhs.userID { return lhs.userID < rhs.userID }
        return lhs.sessionID < rhs.sessionID
    }

    /// 0 where the participant has the property, 1 where not, in priority order.
    private static func rank(_ session: SessionRecord, dominant: SessionID?) -> [Int] {
        let media = session.media
        return [media.pinned, media.screenshare, session.sessionID == dominant, media.speaking, media.video, media.audio].map { $0 ? 0 : 1 }
    }
}
