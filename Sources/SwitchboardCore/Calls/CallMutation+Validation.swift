extension CallMutation {
    /// Refuses a batch holding a free-text field with a NUL character, which SQLite text would
    /// cut short on reading (ids, user ids and JSON never hold raw NULs: their parsers refuse
    /// them). Every ``CallStore`` runs this before it writes anything, so a refused batch changes
    /// nothing in any store.
    public static func validate(_ batch: [CallMutation]) throws(SwitchboardError) {
        if let field = batch.lazy.compactMap(\.textFieldWithNUL).first {
            throw SwitchboardError(.invalidRequest, "call store: \(field) must not contain NUL characters")
        }
    }

    /// The name of the first free-text field holding a NUL character; `nil` when there is none.
    var textFieldWithNUL: String? {
        func nul(_ text: String?) -> Bool { text?.utf8.contains(0) ?? false }
        switch self {
        case .saveCall, .saveMember, .savePlacement, .deletePlacement: return nil
        case .deleteConnection(let id): return nul(id.rawValue) ? "connection id" : nil
        case .saveSession(let session):
            if nul(session.sessionID.rawValue) { return "session_id" }
            if nul(session.connection.rawValue) { return "connection_id" }
            return nul(session.leftReason) ? "left_reason" : nil
        case .appendEvent(let event): return nul(event.type) ? "event type" : nil
        case .saveConnection(let connection):
            if nul(connection.id.rawValue) { return "connection id" }
            return nul(connection.resumeToken) ? "resume_token" : nil
        case .enqueueWebhook(let message, let endpoints):
            if nul(message.id) { return "webhook message id" }
            return endpoints.contains(where: nul) ? "webhook endpoint" : nil
        case .saveWebhookDelivery(let delivery):
            if nul(delivery.messageID) { return "webhook message id" }
            if nul(delivery.endpoint) { return "webhook endpoint" }
            return nul(delivery.lastError) ? "webhook last_error" : nil
        case .saveWebhookEndpoint(let state):
            if nul(state.name) { return "webhook endpoint" }
            return nul(state.secret) || nul(state.previousSecret) ? "webhook secret" : nil
        case .saveDevice(let device): return nul(device.token) ? "device token" : nil
        case .deleteDevice(let key): return nul(key.token) ? "device token" : nil
        }
    }
}
