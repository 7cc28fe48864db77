import SwitchboardProtocol

/// A call's state as this client knows it, changed only by what the server sent: answers
/// (``apply(_:)-snapshot``, ``applyJoin(_:)``, ``applyLeft(_:)``) and events
/// (``apply(_:me:)``). Participants are kept in the protocol's default order after every
/// change. A value type with no I/O: the library's ``Call`` holds one, and tests feed it
/// recorded frames.
public struct CallModel: Sendable, Equatable {
    /// An incoming ring this user has not answered yet.
    public struct IncomingRing: Sendable, Equatable {
        public let from: String
        /// Milliseconds since 1970.
        public let deadline: Int64?
    }

    public let callID: CallID
    public private(set) var info: CallInfo?
    /// Sorted by user id, as the server sends them.
    public private(set) var members: [Member] = []
    /// In the default order (pinned, screenshare, dominant speaker, speaking, video, audio, user).
    public private(set) var participants: [Participant] = []
    public private(set) var dominantSpeaker: String?
    /// The participant sessions this connection holds in the call.
    public private(set) var ownSessionIDs: Set<String> = []
    /// The SFU as this client's session got it (with its token and PIN on a Janus SFU).
    public private(set) var sfu: SFUInfo?
    /// Set while the server rings this user in the call.
    public private(set) var incomingRing: IncomingRing?
    /// Why the call ended, once it has.
    public private(set) var endedReason: String?
    /// Custom events (`call.custom`) seen, oldest first.
    public private(set) var customEvents: [JSONValue] = []

    public init(callID: CallID) {
        self.callID = callID
    }

    public var isJoined: Bool { !ownSessionIDs.isEmpty && endedReason == nil }
    public var isEnded: Bool { endedReason != nil }

    /// The member record of `user`.
    public func member(_ user: String) -> Member? { members.first { $0.userId == user } }

    // MARK: Answers

    public mutating func apply(_ snapshot: CallSnapshot) {
        setInfo(snapshot.call)
        members = snapshot.members
        participants = snapshot.participants
        dominantSpeaker = snapshot.call.dominantSpeaker
        // Sessions of ours the server no longer lists are gone (a resume that came too late).
        ownSessionIDs.formIntersection(snapshot.participants.map(\.sessionId))
        resort()
    }

    public mutating func applyJoin(_ result: JoinResult) {
        endedReason = nil
        incomingRing = nil
        apply(result.snapshot)
        ownSessionIDs.insert(result.sessionId)
        sfu = result.sfu
    }

    public mutating func applyLeft(_ sessions: [String]) {
        ownSessionIDs.subtract(sessions)
        participants.removeAll { sessions.contains($0.sessionId) }
    }

    // MARK: Events

    /// Applies one event about this call; `me` is this client's user id.
    public mutating func apply(_ event: ServerEvent, me: String) {
        let data = event.data
        if let call = data["call"], let info = try? CallInfo(json: call) { setInfo(info) }
        if let list = data["members"], let members = try? Member.list(list) { self.members = members }
        switch event.type {
        case "call.ring":
            incomingRing = IncomingRing(from: data["from"]?.stringValue ?? "", deadline: data["ring_deadline"]?.int64Value)
        case "call.accepted":
            setRingState(of: data["user_id"]?.stringValue, to: .accepted, reason: nil)
            if data["user_id"]?.stringValue == me { incomingRing = nil }
        case "call.rejected":
            setRingState(of: data["user_id"]?.stringValue, to: .rejected, reason: data["reason"]?.stringValue)
            if data["user_id"]?.stringValue == me { incomingRing = nil }
        case "call.ring_stopped":
            incomingRing = nil
            let reason = data["reason"]?.stringValue
            setRingState(of: me, to: reason == "timeout" ? .missed : reason == "cancelled" ? .rejected : .accepted, reason: reason == "cancelled" ? "cancel" : nil)
        case "call.ended":
            endedReason = data["reason"]?.stringValue ?? info?.endedReason ?? "ended"
            incomingRing = nil
            participants = []
            ownSessionIDs = []
            dominantSpeaker = nil
        case "call.participant_joined", "call.participant_updated":
            if let json = data["participant"], let participant = try? Participant(json: json) {
                participants.removeAll { $0.sessionId == participant.sessionId }
                participants.append(participant)
            }
        case "call.participant_left":
            if let session = data["participant"]?["session_id"]?.stringValue {
                participants.removeAll { $0.sessionId == session }
                ownSessionIDs.remove(session)
                // A session that left holds no floor (the server's dominant_speaker_changed follows).
                if dominantSpeaker == session { dominantSpeaker = nil }
            }
        case "call.dominant_speaker_changed":
            dominantSpeaker = data["session_id"]?.stringValue
            for index in participants.indices {
                participants[index].dominantSpeaker = participants[index].sessionId == dominantSpeaker
            }
        case "call.sfu_changed":
            if let json = data["sfu"], let moved = try? SFUInfo(json: json) {
                let session = data["session_id"]?.stringValue
                if session == nil || ownSessionIDs.contains(session ?? "") { sfu = moved }
            }
        case "call.custom":
            customEvents.append(data)
        default:
            break
        }
        resort()
    }

    private mutating func setInfo(_ call: CallInfo) {
        info = call
        // A live call object after an ended one means a join reopened it (its next session).
        endedReason = call.isEnded ? (call.endedReason ?? endedReason ?? "ended") : nil
        dominantSpeaker = call.dominantSpeaker
    }

    private mutating func setRingState(of user: String?, to state: RingState, reason: String?) {
        guard let user, let index = members.firstIndex(where: { $0.userId == user }), members[index].ringState == .ringing else { return }
        members[index].ringState = state
        members[index].ringReason = reason
    }

    private mutating func resort() {
        participants = ParticipantOrder.sorted(participants, dominant: dominantSpeaker)
    }
}
