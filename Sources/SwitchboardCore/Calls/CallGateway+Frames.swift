import Foundation

extension CallGateway {
    /// `{"id":…,"type":"response","data":…}`.
    static func response(_ id: JSONValue, _ data: JSONValue) -> [UInt8] {
        JSONValue.object(["id": id, "type": .string("response"), "data": data]).bytes
    }

    /// `{"id":…,"type":"error","error":{"code":…,"message":…}}`; no `id` member when the
    /// frame had none.
    public static func errorFrame(_ id: JSONValue, _ error: SwitchboardError) -> [UInt8] {
        var fields: [String: JSONValue] = [
            "type": .string("error"), "error": .object(["code": .string(error.code.rawValue), "message": .string(error.message)]),
        ]
        if id != .null { fields["id"] = id }
        return JSONValue.object(fields).bytes
    }

    /// An event frame: `{"type":…,"seq":…,"call_cid":…,"data":…}`.
    static func eventFrame(type: String, seq: UInt64, cid: CallCID?, data: JSONValue) -> [UInt8] {
        var fields: [String: JSONValue] = ["type": .string(type), "seq": .number(Double(seq)), "data": data]
        if let cid { fields["call_cid"] = .string(cid.cid) }
        return JSONValue.object(fields).bytes
    }

    /// Delivers every notice of `calls` to its connections, each getting its own `seq`. A notice
    /// for all of a user's connections skips those whose token's `call_cids` leave its call out.
    mutating func deliver(_ notices: [CallNotice], into output: inout CallGatewayOutput) {
        for notice in notices {
            var targets = notice.connections
            for user in notice.users {
                targets.formUnion((userClients[user] ?? []).filter { mayWatch($0, notice.cid) })
            }
            if let except = notice.except { targets.remove(except) }
            for client in targets.sorted() {
                emit(type: notice.type, cid: notice.cid, data: notice.data, to: client, into: &output)
            }
        }
    }

    /// Whether `client` sees events of `cid`: always, unless its token names `call_cids` without it.
    func mayWatch(_ client: ClientConnectionID, _ cid: CallCID?) -> Bool {
        guard let cid, let allowed = clients[client]?.token.callCIDs else { return true }
        return allowed.contains(cid.cid)
    }

    /// Numbers an event for one client connection, keeps it for replay and sends it if the
    /// connection has a socket.
    ///
    /// The connection is changed in place (through its index): a copy taken out of `clients`
    /// would share the replay buffer with the one left in it, and the append would copy the
    /// whole buffer, frame by frame, on every event.
    mutating func emit(type: String, cid: CallCID?, data: JSONValue, to client: ClientConnectionID, into output: inout CallGatewayOutput) {
        guard let index = clients.index(forKey: client) else { return }
        let seq = clients.values[index].nextSeq
        clients.values[index].nextSeq += 1
        if output.emitted[client] == nil { output.emitted[client] = seq }
        let frame = Self.eventFrame(type: type, seq: seq, cid: cid, data: data)
        clients.values[index].buffer.append(seq: seq, frame: frame, keeping: configuration.replayBuffer)
        if let socket = clients.values[index].socket { output.commands.append(.send(socket, frame)) }
    }

    /// Answers a request.
    mutating func respond(_ socket: ConnectionID, id: JSONValue, _ result: Result<JSONValue, SwitchboardError>, into output: inout CallGatewayOutput) {
        switch result {
        case .success(let data): output.commands.append(.send(socket, Self.response(id, data)))
        case .failure(let error): output.commands.append(.send(socket, Self.errorFrame(id, error)))
        }
        output.responded.append((socket, id))
    }

    /// Sends an error frame and closes (4001 by default), for a socket that could not
    /// authenticate; the failure counts against its address, or against `user` at the address
    /// when a genuine token named one.
    mutating func refuse(
        _ socket: ConnectionID, id: JSONValue, _ error: SwitchboardError, code: CloseCode = .unauthenticated, user: UserID? = nil,
        into output: inout CallGatewayOutput
    ) {
        if let waiting = pending.removeValue(forKey: socket), code == .unauthenticated {
            countAuthFailure(from: waiting.remoteAddress, user: user, at: waiting.openedAt)
        }
        output.commands.append(.send(socket, Self.errorFrame(id, error)))
        output.commands.append(.close(socket, code, reason: error.code.rawValue))
        output.authFailures.append(code == .unauthenticated ? error.code.rawValue : "limited")
    }
}
