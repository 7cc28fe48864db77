import SwitchboardProtocol
import Foundation

/// A call the engine holds in memory: its record, members, active sessions and derived state.
public struct LiveCall: Sendable, Equatable {
    public var record: CallRecord
    public var settings: CallTypeSettings
    public var members: [UserID: MemberRecord]
    /// Sessions that have not left.
    public var sessions: [SessionID: SessionRecord]
    public var dominant: DominantSpeaker
    public var sfu: SFUAssignment?

    public init(record: CallRecord, settings: CallTypeSettings, members: [MemberRecord] = [], sessions: [SessionRecord] = []) {
        self.record = record
        self.settings = settings
        self.members = Dictionary(members.map { ($0.userID, $0) }, uniquingKeysWith: { _, last in last })
        self.sessions = Dictionary(sessions.map { ($0.sessionID, $0) }, uniquingKeysWith: { _, last in last })
        self.dominant = DominantSpeaker()
    }

    public var cid: CallCID { record.cid }

    /// Members still being rung.
    public var ringingMembers: [UserID] {
        members.values.filter { $0.ringState == .ringing }.map(\.userID).sorted()
    }

    /// The connections holding a session in this call.
    public var participantConnections: Set<ClientConnectionID> {
        Set(sessions.values.map(\.connection))
    }

    /// Participants in the default order (see ``ParticipantOrder``).
    public var orderedSessions: [SessionRecord] {
        ParticipantOrder.sorted(Array(sessions.values), dominant: dominant.current)
    }

    /// Whether `user` has a session open in this call.
    func hasSession(of user: UserID) -> Bool {
        sessions.values.contains { $0.userID == user }
    }
}
