import Observation

/// An incoming call waiting for an answer.
public struct IncomingCall: Sendable, Equatable {
    public let callID: CallID
    public let caller: String
    public init(callID: CallID, caller: String) {
        self.callID = callID
        self.caller = caller
    }
}

/// The calling screens' state (after the product documents' `CallViewModel`).
public enum CallingState: Sendable, Equatable {
    case idle
    /// This user rings others and waits for an answer.
    case outgoing
    /// Someone rings this user.
    case incoming(IncomingCall)
    case inCall
    /// In a call whose socket dropped; resuming.
    case reconnecting
}

/// Drives ringing and meeting flows for a calling UI. Ringing mode (the default,
/// `joinCallInstantly == false`): ``startCall(callType:callId:members:ring:)`` rings and shows
/// `outgoing`; the first `call.accepted` joins and shows `inCall`; a `call.ring` shows `incoming`
/// until ``acceptCall()`` or ``rejectCall(reason:)``. Meeting mode joins at once. Every state
/// comes from a server frame (no `inCall` before the join's answer).
@MainActor
@Observable
public final class CallViewModel {
    public private(set) var callingState: CallingState = .idle
    public private(set) var call: Call?
    /// Why the last call ended or was not answered (`decline`, `busy`, `no_answer`, …).
    public private(set) var lastOutcome: String?
    public private(set) var lastError: SwitchboardClientError?
    public private(set) var microphoneOn = true
    public private(set) var cameraOn = true

    public let client: SwitchboardClient
    @ObservationIgnored private var listener: Task<Void, Never>?
    @ObservationIgnored private var controller: CallController?
    /// The call the screens are about (kept after it ends, so its last events still count).
    @ObservationIgnored private var current: Call?
    @ObservationIgnored private var connection: ConnectionState = .disconnected

    public init(client: SwitchboardClient) {
        self.client = client
        listener = Task { [weak self] in
            let events = await client.events()
            for await event in events {
                guard let self else { return }
                await self.handle(event)
            }
        }
    }

    /// Stops following the client's events (the client itself stays connected).
    public func stop() { listener?.cancel() }

    /// Starts a call: meeting mode joins (creating the call); ringing mode rings `members` and
    /// waits for an answer in `outgoing`.
    public func startCall(callType: String, callId: String, members: [String], ring: Bool = true) async {
        let controller = client.makeCallController(callType: callType, callId: callId)
        self.controller = controller
        lastOutcome = nil
        // Followed before the request goes out: its events may arrive before its answer is read.
        current = await controller.call()
        await perform {
            if self.client.config.joinCallInstantly || !ring {
                self.call = try await controller.joinCall(members: members, ring: ring)
            } else {
                self.call = try await controller.getOrCreate(members: members, ring: true)
            }
            self.refresh()
        }
    }

    /// Joins the call that rings this user (joining accepts).
    public func acceptCall() async {
        guard case .incoming(let incoming) = callingState else { return }
        let controller = client.makeCallController(callType: incoming.callID.type, callId: incoming.callID.id)
        self.controller = controller
        await perform {
            self.call = try await controller.joinCall(create: false)
            self.refresh()
        }
    }

    /// Rejects the ring (`decline` by default, or `busy`).
    public func rejectCall(reason: String = "decline") async {
        guard case .incoming(let incoming) = callingState else { return }
        let controller = client.makeCallController(callType: incoming.callID.type, callId: incoming.callID.id)
        await perform {
            self.call = try await controller.reject(reason: reason)
            self.lastOutcome = reason
            self.refresh()
        }
    }

    /// Leaves the call; a caller still ringing cancels the ring; in a two-person ringing call
    /// the call ends for both.
    public func hangUp() async {
        guard let controller, let call else { return }
        await perform {
            if case .outgoing = self.callingState {
                try await controller.reject(reason: "cancel")
            } else if call.callID.type == "ringing", call.participants.count <= 2, call.info?.createdBy == call.me {
                try await controller.end()
            } else {
                try await controller.leave()
            }
            self.refresh()
        }
    }

    public func toggleMicrophone() async {
        microphoneOn.toggle()
        await publishMedia(MediaUpdate(audio: microphoneOn))
    }

    public func toggleCamera() async {
        cameraOn.toggle()
        await publishMedia(MediaUpdate(video: cameraOn))
    }

    private func publishMedia(_ update: MediaUpdate) async {
        guard let controller, call?.isJoined == true else { return }
        await perform { try await controller.updateParticipant(update) }
    }

    private func perform(_ body: @MainActor () async throws -> Void) async {
        do {
            try await body()
            lastError = nil
        } catch {
            lastError = error as? SwitchboardClientError ?? SwitchboardClientError(.internal, "\(error)")
            refresh()
        }
    }

    private func handle(_ event: ClientEvent) async {
        switch event {
        case .connectionChanged(let state):
            connection = state
        case .incomingCall(let id, let from):
            if call == nil || call?.isJoined != true {
                call = await client.call(id)
                current = call
                controller = client.makeCallController(callType: id.type, callId: id.id)
                _ = from
            }
        case .event(let event):
            guard let call = current, event.callCID == call.callID.cid else { break }
            switch event.type {
            case "call.accepted" where !call.isJoined && call.info?.createdBy == call.me && !client.config.joinCallInstantly:
                // Ringing mode: the caller joins once someone answers.
                if let controller { await perform { try await controller.joinCall(create: false) } }
            case "call.rejected", "call.missed", "call.ended", "call.ring_stopped":
                lastOutcome = event.data["reason"]?.stringValue ?? (event.type == "call.missed" ? "missed" : lastOutcome)
            default:
                break
            }
        }
        refresh()
    }

    /// Derives the calling state from the call's server-confirmed state and the connection.
    private func refresh() {
        if let call, call !== current { current = call }
        guard let call, !call.isEnded else {
            callingState = .idle
            if call?.isEnded == true { self.call = nil }
            return
        }
        if call.isJoined {
            callingState = connection == .reconnecting ? .reconnecting : .inCall
        } else if let ring = call.incomingRing {
            callingState = .incoming(IncomingCall(callID: call.callID, caller: ring.from))
        } else if call.info?.createdBy == call.me, call.info?.ringing == true {
            callingState = .outgoing
        } else {
            callingState = .idle
        }
    }
}
