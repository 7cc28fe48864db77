import Observation

/// A call as the app observes it: the call, its members with their ring states, the
/// participants in the protocol's default order, the dominant speaker and the SFU. Changes
/// only when the server says so; SwiftUI (or `withObservationTracking`) sees every change.
@MainActor
@Observable
public final class Call {
    public let callID: CallID
    /// The state, from the server's frames.
    public private(set) var model: CallModel
    /// This client's user.
    public let me: String

    @ObservationIgnored private var continuations: [Int: AsyncStream<ServerEvent>.Continuation] = [:]
    @ObservationIgnored private var nextListener = 0

    init(callID: CallID, me: String) {
        self.callID = callID
        self.me = me
        self.model = CallModel(callID: callID)
    }

    public var info: CallInfo? { model.info }
    public var members: [Member] { model.members }
    public var participants: [Participant] { model.participants }
    public var dominantSpeaker: String? { model.dominantSpeaker }
    public var sfu: SFUInfo? { model.sfu }
    public var isJoined: Bool { model.isJoined }
    public var isEnded: Bool { model.isEnded }
    public var endedReason: String? { model.endedReason }
    public var incomingRing: CallModel.IncomingRing? { model.incomingRing }
    /// This client's participant session (the latest, when it joined more than once).
    public var ownSessionID: String? { participants.first { model.ownSessionIDs.contains($0.sessionId) }?.sessionId ?? model.ownSessionIDs.first }

    /// Every event about this call from now on, in order. Each call to `events` is its own stream.
    public var events: AsyncStream<ServerEvent> {
        let (stream, continuation) = AsyncStream<ServerEvent>.makeStream(bufferingPolicy: .bufferingNewest(512))
        let key = nextListener
        nextListener += 1
        continuations[key] = continuation
        continuation.onTermination = { [weak self] _ in
            Task { @MainActor in self?.continuations[key] = nil }
        }
        return stream
    }

    func apply(_ event: ServerEvent) {
        model.apply(event, me: me)
        for continuation in continuations.values { continuation.yield(event) }
    }

    func apply(_ snapshot: CallSnapshot) { model.apply(snapshot) }
    func applyJoin(_ result: JoinResult) { model.applyJoin(result) }
    func applyLeft(_ sessions: [String]) { model.applyLeft(sessions) }
}
