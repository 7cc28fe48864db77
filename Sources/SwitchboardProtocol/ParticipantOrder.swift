/// What the default participant order looks at in a participant session.
public protocol ParticipantOrderable {
    var orderUserID: String { get }
    var orderSessionID: String { get }
    var isPinned: Bool { get }
    var isScreensharing: Bool { get }
    var isSpeaking: Bool { get }
    var publishesVideo: Bool { get }
    var publishesAudio: Bool { get }
}

/// The default participant order, as Stream Video's SDK sorts by default: pinned,
/// screensharing, dominant speaker, speaking, publishing video, publishing audio, then user
/// id (and session id, so the order is total). One rule for the daemon (every `participants`
/// list it sends) and the client libraries (which keep the order on every update).
public enum ParticipantOrder {
    public static func sorted<P: ParticipantOrderable>(_ sessions: [P], dominant: String?) -> [P] {
        sessions.sorted { precedes($0, $1, dominant: dominant) }
    }

    /// Whether `lhs` comes before `rhs`.
    public static func precedes<P: ParticipantOrderable>(_ lhs: P, _ rhs: P, dominant: String?) -> Bool {
        let left = rank(lhs, dominant: dominant)
        let right = rank(rhs, dominant: dominant)
        if left != right { return left < right }
        if lhs.orderUserID != rhs.orderUserID { return lhs.orderUserID < rhs.orderUserID }
        return lhs.orderSessionID < rhs.orderSessionID
    }

    /// One bit per criterion, the first criterion highest, set where the participant LACKS the
    /// property: a smaller rank sorts first (a lexicographic comparison of the criteria, without
    /// building an array per comparison).
    private static func rank<P: ParticipantOrderable>(_ session: P, dominant: String?) -> Int {
        func lacks(_ has: Bool, _ bit: Int) -> Int { has ? 0 : 1 << bit }
        return lacks(session.isPinned, 5) | lacks(session.isScreensharing, 4) | lacks(session.orderSessionID == dominant, 3)
            | lacks(session.isSpeaking, 2) | lacks(session.publishesVideo, 1) | lacks(session.publishesAudio, 0)
    }
}
