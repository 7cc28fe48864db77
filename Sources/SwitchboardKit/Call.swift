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

    // Answers as they are read (``SwitchboardClient/request(_:data:applying:)``), in order with
    // the events around them. An answer that does not decode changes nothing; the caller
    // decodes it again and reports the error.

    /// Applies an answer that is a call snapshot.
    nonisolated var applySnapshot: @Sendable (JSONValue) async -> Void {
        { [weak self] data in
            guard let snapshot = try? Wire.decode(CallSnapshot.self, from: data) else { return }
            await self?.apply(snapshot)
        }
    }

    /// Applies the answer to `call.join`.
    nonisolated var applyJoinAnswer: @Sendable (JSONValue) async -> Void {
        { [weak self] data in
            guard let result = try? Wire.decode(JoinResult.self, from: data) else { return }
            await self?.applyJoin(result)
        }
    }

    /// Applies the answer to `call.leave`: the sessions that left.
    nonisolated var applyLeaveAnswer: @Sendable (JSONValue) async -> Void {
        { [weak self] data in await self?.applyLeft(Self.leftSessions(data)) }
    }

    nonisolated static func leftSessions(_ data: JSONValue) -> [String] {
        guard case .array(let items)? = data["left"] else { return [] }
        return items.compactMap(\.stringValue)
    }
}
