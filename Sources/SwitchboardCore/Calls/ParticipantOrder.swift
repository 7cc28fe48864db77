import SwitchboardProtocol

/// A stored participant session in the shared default order (``SwitchboardProtocol/ParticipantOrder``).
extension SessionRecord: ParticipantOrderable {
    public var orderUserID: String { userID.rawValue }
    public var orderSessionID: String { sessionID.rawValue }
    public var isPinned: Bool { media.pinned }
    public var isScreensharing: Bool { media.screenshare }
    public var isSpeaking: Bool { media.speaking }
    public var publishesVideo: Bool { media.video }
    public var publishesAudio: Bool { media.audio }
}

extension ParticipantOrder {
    public static func sorted(_ sessions: [SessionRecord], dominant: SessionID?) -> [SessionRecord] {
        sorted(sessions, dominant: dominant?.rawValue)
    }

    public static func precedes(_ lhs: SessionRecord, _ rhs: SessionRecord, dominant: SessionID?) -> Bool {
        precedes(lhs, rhs, dominant: dominant?.rawValue)
    }
}
