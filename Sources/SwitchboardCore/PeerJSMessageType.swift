/// The PeerJS message types the server acts on. Matching is case-sensitive.
public enum PeerJSMessageType: String, Sendable, CaseIterable {
    case offer = "OFFER"
    case answer = "ANSWER"
    case candidate = "CANDIDATE"
    case leave = "LEAVE"
    case expire = "EXPIRE"
    case heartbeat = "HEARTBEAT"

    /// Types that are queued for a destination that is not connected.
    public var isQueuedWhenOffline: Bool {
        switch self {
        case .offer, .answer, .candidate: true
        case .leave, .expire, .heartbeat: false
        }
    }
}
