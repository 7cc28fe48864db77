import SwitchboardCore

/// PeerJS frames: the parser on the whole input (text and binary), then a ``PeerRelay`` with
/// two registered peers fed the input as a script (see ``FuzzScript``): each line a frame.
///
/// Invariants checked besides "no trap": the scanner and the parser agree with each other,
/// binary and text parsing agree on valid UTF-8, and every frame the relay sends is a JSON
/// object with a string `type`, a relayed one carrying the sender's payload byte for byte.
enum PeerJSFrameEntry {
    static let configuration = RelayConfiguration(
        key: "peerjs", concurrentLimit: 4, expireTimeout: .seconds(5), aliveTimeout: .seconds(60),
        maxQueuedPerDestination: 4, maxQueuedPerSender: 8, maxQueuedTotal: 12, maxQueuedBytes: 4096,
        malformedRate: 1, malformedBurst: 3, messageRate: 10, messageBurst: 20)

    static func run(_ bytes: [UInt8]) -> FuzzFinding? {
        if let finding = checkParsers(bytes) { return finding }
        return driveRelay(bytes)
    }

    // MARK: - Parsers

    static func checkParsers(_ bytes: [UInt8]) -> FuzzFinding? {
        let text = PeerJSInbound.parse(bytes, isBinary: false)
        let binary = PeerJSInbound.parse(bytes, isBinary: true)
        let members = Result { () throws(JSONScanner.Failure) in try JSONScanner.topLevelMembers(of: bytes) }
        let valid = Result { () throws(JSONScanner.Failure) in try JSONScanner.validate(bytes) }
        switch (members, valid) {
        case (.success, .failure(let error)):
            return FuzzFinding("topLevelMembers accepted what validate refused (\(error))")
        case (.failure(.notAnObject), .failure(let error)):
            return FuzzFinding("topLevelMembers said notAnObject but validate refused (\(error))")
        case (.failure(let error), .success) where error != .notAnObject:
            return FuzzFinding("validate accepted what topLevelMembers refused as \(error)")
        default: break
        }
        if case .success(let list) = members {
            for member in list {
                guard member.value.lowerBound >= 0, member.value.upperBound <= bytes.count, !member.value.isEmpty else {
                    return FuzzFinding("member \(member.key) has range \(member.value) outside the \(bytes.count) bytes")
                }
                do {
                    try JSONScanner.validate(Array(bytes[member.value]))
                } catch {
                    return FuzzFinding("member \(member.key)'s value bytes are not one JSON value: \(error)")
                }
            }
        }
        if String(validating: bytes, as: UTF8.self) != nil, kind(text) != kind(binary) {
            return FuzzFinding("valid UTF-8 parsed as \(kind(text)) as text but \(kind(binary)) as binary")
        }
        if case .message(let message) = text, let payload = message.payload {
            guard payload.lowerBound >= 0, payload.upperBound <= bytes.count else {
                return FuzzFinding("payload range \(payload) outside the frame")
            }
        }
        return nil
    }

    private static func kind(_ inbound: PeerJSInbound) -> String {
        switch inbound {
        case .malformed: "malformed"
        case .ignored: "ignored"
        case .message(let message): "message(\(message.type.rawValue), dst: \(message.destination ?? "nil"))"
        }
    }

    // MARK: - Relay

    static func driveRelay(_ bytes: [UInt8]) -> FuzzFinding? {
        var relay = PeerRelay(configuration: configuration)
        var now = MonotonicTime(nanoseconds: 1_000_000_000)
        var effects: [RelayEffect] = []
        var main = ConnectionID(rawValue: 1)
        let second = ConnectionID(rawValue: 2)
        var nextConnection: UInt64 = 3
        relay.connectionOpened(main, query: ["key": "peerjs", "id": "alice", "token": "ta"], now: now, into: &effects)
        relay.connectionOpened(second, query: ["key": "peerjs", "id": "bob", "token": "tb"], now: now, into: &effects)
        if let finding = check(effects, payload: nil) { return finding }
        for step in FuzzScript.steps(bytes) {
            FuzzTrace.print("step \(step)")
            effects.removeAll(keepingCapacity: true)
            var payload: [UInt8]?
            switch step {
            case .frame(let frame, let fromSecond):
                if case .message(let message) = PeerJSInbound.parse(frame, isBinary: false), let bytes = message.payloadBytes {
                    payload = Array(bytes)
                }
                now = now.advanced(by: .milliseconds(1))
                relay.frameReceived(fromSecond ? second : main, frame, isBinary: false, now: now, into: &effects)
            case .tick(let seconds):
                now = now.advanced(by: .seconds(seconds))
                relay.tick(now: now, into: &effects)
            case .close:
                relay.connectionClosed(main)
            case .open(let argument):
                main = ConnectionID(rawValue: nextConnection)
                nextConnection += 1
                // `@open ID` registers another id, `@open ID TOKEN` can also try to take one over.
                let parts = (argument ?? "alice").split(separator: " ", maxSplits: 1).map(String.init)
                let query = ["key": "peerjs", "id": parts.first ?? "", "token": parts.count > 1 ? parts[1] : "ta"]
                relay.connectionOpened(main, query: query, now: now, into: &effects)
            }
            if let finding = check(effects, payload: payload) { return finding }
        }
        return nil
    }

    /// Every frame sent is a JSON object with a string `type`; a relayed one (it has a delivery
    /// receipt) carries `payload` exactly as the sender wrote it.
    private static func check(_ effects: [RelayEffect], payload: [UInt8]?) -> FuzzFinding? {
        for effect in effects {
            switch effect {
            case .send(let connection, let frame, let receipt): FuzzTrace.print("  -> \(connection) \(FuzzTrace.text(frame))\(receipt == nil ? "" : " (receipt)")")
            case .close(let connection, let code, let reason): FuzzTrace.print("  -> \(connection) close \(code) \(reason)")
            }
        }
        for effect in effects {
            guard case .send(_, let frame, let receipt) = effect else { continue }
            let members: [JSONScanner.Member]
            do {
                members = try JSONScanner.topLevelMembers(of: frame)
            } catch {
                return FuzzFinding("the relay sent a frame that is not a JSON object (\(error)): \(String(decoding: frame, as: UTF8.self).prefix(200))")
            }
            guard let type = members.last(where: { $0.key == "type" }), JSONScanner.decodeString(frame, type.value) != nil else {
                return FuzzFinding("the relay sent a frame without a string type: \(String(decoding: frame, as: UTF8.self).prefix(200))")
            }
            if receipt != nil, let payload {
                let sent = members.last(where: { $0.key == "payload" }).map { Array(frame[$0.value]) }
                guard sent == payload else {
                    return FuzzFinding("the relayed payload differs from the sender's: \(String(decoding: frame, as: UTF8.self).prefix(200))")
                }
            }
        }
        return nil
    }
}
