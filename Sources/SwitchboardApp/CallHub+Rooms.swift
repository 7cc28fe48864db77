import Foundation
import SwitchboardCore

extension CallHub {
    /// The rooms live calls want on SFUs with rooms (Janus), by SFU: each call placed there and
    /// its participant sessions now. Read on the hub's queue between batches, so it is what the
    /// store holds (a batch's changes are visible only once it committed or was rolled back).
    public func desiredRooms() async -> [SFUID: [DesiredRoom]] {
        await withCheckedContinuation { continuation in
            queue.async { continuation.resume(returning: self.roomsOnQueue()) }
        }
    }

    func roomsOnQueue() -> [SFUID: [DesiredRoom]] {
        dispatchPrecondition(condition: .onQueue(queue))
        var rooms: [SFUID: [DesiredRoom]] = [:]
        for call in gateway.engine.calls.values where call.record.isLive {
            guard let sfu = call.sfu, let room = sfu.room, let id = SFUID(sfu.id) else { continue }
            rooms[id, default: []].append(
                DesiredRoom(room: room.id, call: call.cid.cid, publishers: call.settings.maxParticipants, sessions: call.sessions.keys.sorted()))
        }
        return rooms
    }

    /// Sets who hears of commits that change SFU rooms (before or after ``start(transport:)``).
    public func onRoomsChanged(_ handler: (@Sendable () -> Void)?) {
        queue.sync { roomsChanged = handler }
    }

    /// Hands the webhook messages of every commit to `handler` (the delivery worker), after the
    /// commit. Set before ``start(transport:)`` so the messages a restart writes reach it too.
    public func onWebhooksCommitted(_ handler: (@Sendable ([PendingWebhook]) -> Void)?) {
        queue.sync { webhooksCommitted = handler }
    }

    /// Whether a committed batch changed what some SFU room should hold: a placement made or
    /// released, or a session of a call with a room saved (joined, left, kicked).
    func touchesRooms(_ output: CallGatewayOutput) -> Bool {
        if !output.calls.placed.isEmpty || !output.calls.releasedPlacements.isEmpty { return true }
        for case .saveSession(let session) in output.mutations where gateway.engine.calls[session.cid]?.sfu?.room != nil {
            return true
        }
        return false
    }
}
