import Foundation

/// The webhook outbox of the call layer (ADR 0011): every call event log entry a batch appends
/// whose type an endpoint takes becomes a ``WebhookMessage`` in the same batch, so it is
/// committed in the same transaction as the change it reports, or not at all.
extension CallGateway {
    /// Appends the batch's webhook messages and, for each call that got one, the call's record
    /// with its new ``CallRecord/eventSeq``. Call once per batch, after everything else the
    /// batch did and before it is committed. Without endpoints it does nothing.
    public mutating func addWebhooks(into output: inout CallGatewayOutput, now: Date, newID: () -> String) {
        let routing = configuration.webhooks
        guard !routing.isEmpty else { return }
        var added: [CallMutation] = []
        var numbered: [CallCID] = []
        for case .appendEvent(let event) in output.calls.mutations {
            guard let type = WebhookEventType(logType: event.type) else { continue }
            let endpoints = routing.endpoints(for: type)
            guard !endpoints.isEmpty, let call = engine.calls[event.cid] else { continue }
            let seq = call.record.eventSeq + 1
            engine.calls[event.cid]!.record.eventSeq = seq
            if !numbered.contains(event.cid) { numbered.append(event.cid) }
            var data: [String: JSONValue] = [:]
            if case .object(let payload) = event.payload { data = payload }
            data["call_cid"] = .string(event.cid.cid)
            data["seq"] = .number(Double(seq))
            data["call"] = Self.identity(call.record, session: event.callSession)
            if type == .callRing {
                let rung = ringing(event.payload["members"], in: call)
                // Everyone was busy (rejected at once): nobody is rung, nothing to tell.
                guard rung.arrayValue?.isEmpty == false else { continue }
                data["ringing"] = rung
            }
            let message = WebhookMessage(
                id: "msg_" + newID(), type: type, createdAt: event.at, lane: event.cid.cid, seq: seq, data: .object(data))
            added.append(.enqueueWebhook(message, endpoints: endpoints))
        }
        for cid in numbered {
            if let record = engine.calls[cid]?.record { added.append(.saveCall(record)) }
        }
        output.calls.mutations += added
    }

    /// What never changes about a call: its ids, creator, creation and the call session.
    static func identity(_ record: CallRecord, session: Int) -> JSONValue {
        .object([
            "cid": .string(record.cid.cid), "type": .string(record.cid.type), "id": .string(record.cid.id),
            "created_by": .string(record.createdBy.rawValue), "created_at": .time(record.createdAt), "session": .number(Double(session)),
        ])
    }

    /// Each rung member: whether a socket of theirs is attached (and so got the ring), whether
    /// a connection of theirs waits for a resume, until when they are rung, and, unless a socket
    /// is attached, their push devices (an app asleep has no socket; one that went to the
    /// background moments ago may still hold a resumable connection).
    func ringing(_ members: JSONValue?, in call: LiveCall) -> JSONValue {
        .array(
            (members?.arrayValue ?? []).compactMap(\.stringValue).compactMap { name -> JSONValue? in
                guard let user = UserID(name) else { return nil }
                let connections = (userClients[user] ?? []).compactMap { clients[$0] }
                // With other nodes holding connections too: what the store knew before the batch.
                let elsewhere = engine.presence[user]
                let connected = connections.contains { $0.socket != nil } || elsewhere?.attached == true
                return .object([
                    "user_id": .string(name), "connected": .bool(connected),
                    "resumable": .bool(!connected && (!connections.isEmpty || elsewhere?.resumable == true)),
                    "ring_deadline": call.members[user]?.ringDeadline.map(JSONValue.time) ?? .null,
                    "devices": .array(connected ? [] : (elsewhere?.devices ?? devices[user] ?? []).map(\.webhookJSON)),
                ])
            })
    }
}

extension DeviceRecord {
    /// As the `call.ring` webhook carries it: what a push service needs.
    var webhookJSON: JSONValue {
        .object(["provider": .string(provider.rawValue), "token": .string(token)])
    }
}
