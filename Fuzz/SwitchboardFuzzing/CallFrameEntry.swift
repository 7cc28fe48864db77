import Foundation
import SwitchboardCore

/// Call-protocol frames: ``ClientFrame/parse(_:maxCustomBytes:)`` on the whole input, then a
/// ``CallGateway`` with two authenticated users (alice, the main client, and bob) fed the input
/// as a script (see ``FuzzScript``), the host's part played here: token checks are answered
/// (see ``verify(_:now:)``) and the clock moves only with `@tick`.
///
/// Invariants checked besides "no trap": every frame sent is a JSON object with a string
/// `type`, no error frame carries the `internal` code, and event `seq`s only grow per socket.
enum CallFrameEntry {
    static let configuration = CallConfiguration(
        resumeWindow: .seconds(30), replayBuffer: 8, maxCustomBytes: 512, ringRatePerMinute: 20, ringBurst: 3, maxMembers: 8,
        connectionsPerUser: 3, messageRate: 20, messageBurst: 30, authFailuresPerMinute: 6, authFailureBurst: 3)

    static let start = Date(timeIntervalSince1970: 1_800_000_000)

    static func run(_ bytes: [UInt8]) -> FuzzFinding? {
        if case .success(let frame) = ClientFrame.parse(bytes, maxCustomBytes: configuration.maxCustomBytes),
            case .failure(let failure) = ClientFrame.parse(JSONValue.parse(bytes)?.bytes ?? [], maxCustomBytes: configuration.maxCustomBytes)
        {
            return FuzzFinding("\(frame.request) parsed, but its re-encoding failed: \(failure.error)")
        }
        var session = Session()
        return session.run(FuzzScript.steps(bytes))
    }

    /// The placer: peer-to-peer, except call ids starting `sfu` (an SFU) or `nosfu` (none available).
    struct Placer: CallPlacer, PlacementSource {
        func placer() -> any CallPlacer { self }
        func current(_ cid: CallCID) -> SFUAssignment? { nil }
        func committed(placed: [PlacementRecord], released: [CallCID], refusals: [PlacementCandidate.Rejection?]) {}

        func place(
            _ cid: CallCID, participants: [LocationHint], current: SFUAssignment?, now: Date, out: inout CallOutput
        ) throws(SwitchboardError) -> SFUAssignment? {
            if cid.id.hasPrefix("nosfu") { throw SwitchboardError(.noSFUAvailable, "no SFU") }
            return cid.id.hasPrefix("sfu") ? SFUAssignment(id: "sfu-1", url: "wss://sfu-1.example/ws", region: "fra") : nil
        }
    }

    /// What the host's token check answers: `u:NAME` a user, `admin:NAME` an admin,
    /// `cid:TYPE:ID:NAME` a user limited to one call, `exp:NAME` a token expiring in 90 s,
    /// `old:NAME` an expired one; anything else is invalid.
    static func verify(_ token: String, now: Date) -> Result<UserToken, SwitchboardError> {
        let parts = token.split(separator: ":", omittingEmptySubsequences: false).map(String.init)
        let hour = now.addingTimeInterval(3600)
        switch (parts.first, parts.count) {
        case ("u", 2): return .success(UserToken(userID: parts[1], issuedAt: now, expiresAt: hour))
        case ("admin", 2): return .success(UserToken(userID: parts[1], issuedAt: now, expiresAt: hour, role: "admin"))
        case ("cid", 4): return .success(UserToken(userID: parts[3], issuedAt: now, expiresAt: hour, callCIDs: [parts[1] + ":" + parts[2]]))
        case ("exp", 2): return .success(UserToken(userID: parts[1], issuedAt: now, expiresAt: now.addingTimeInterval(90)))
        case ("old", 2): return .success(UserToken(userID: parts[1], issuedAt: now.addingTimeInterval(-7200), expiresAt: now.addingTimeInterval(-3600)))
        default: return .failure(SwitchboardError(.tokenInvalid, "not a fuzz token"))
        }
    }

    struct Session {
        var gateway = CallGateway(configuration: CallFrameEntry.configuration)
        var now = CallFrameEntry.start
        var main = ConnectionID(rawValue: 1)
        let second = ConnectionID(rawValue: 2)
        var nextSocket: UInt64 = 3
        var ids = 0
        /// The last event `seq` each socket saw.
        var lastSeq: [ConnectionID: Double] = [:]

        mutating func run(_ steps: [FuzzScript.Step]) -> FuzzFinding? {
            if let finding = open(main, token: "u:alice") { return finding }
            if let finding = open(second, token: "u:bob") { return finding }
            for step in steps {
                FuzzTrace.print("step \(step)")
                var output = CallGatewayOutput()
                switch step {
                case .frame(let frame, let fromSecond):
                    now = now.addingTimeInterval(0.001)
                    let ids = IDSource(counter: self.ids)
                    gateway.frameReceived(fromSecond ? second : main, frame, placer: Placer(), newID: ids.next, now: now, into: &output)
                    self.ids = ids.counter
                case .tick(let seconds):
                    now = now.addingTimeInterval(TimeInterval(seconds))
                    gateway.tick(now: now, into: &output)
                case .close:
                    gateway.socketClosed(main, now: now)
                case .open(let token):
                    main = ConnectionID(rawValue: nextSocket)
                    nextSocket += 1
                    // `@open` alone: the client must send {"type":"auth",…}; `@open TOKEN`: the
                    // token came with the upgrade (header or query).
                    gateway.socketOpened(main, token: token, resume: nil, remoteAddress: "192.0.2.1", now: now, into: &output)
                }
                if let finding = settle(&output) { return finding }
            }
            return nil
        }

        /// A socket that authenticates with `token` at the upgrade.
        mutating func open(_ socket: ConnectionID, token: String) -> FuzzFinding? {
            var output = CallGatewayOutput()
            gateway.socketOpened(socket, token: token, resume: nil, remoteAddress: "192.0.2.1", now: now, into: &output)
            return settle(&output)
        }

        /// Checks what a step produced, then plays the host: answers token checks (which may
        /// produce more output) until none is left.
        mutating func settle(_ first: inout CallGatewayOutput) -> FuzzFinding? {
            var output = first
            for _ in 0..<32 {
                if let finding = check(output) { return finding }
                let checks = output.tokenChecks
                guard !checks.isEmpty else { return nil }
                output = CallGatewayOutput()
                for check in checks {
                    let ids = IDSource(counter: self.ids)
                    gateway.tokenChecked(
                        check.socket, purpose: check.purpose, result: CallFrameEntry.verify(check.token, now: now), placer: Placer(), now: now,
                        newID: ids.next, into: &output)
                    self.ids = ids.counter
                }
            }
            return nil
        }

        mutating func check(_ output: CallGatewayOutput) -> FuzzFinding? {
            for command in output.commands {
                switch command {
                case .send(let socket, let frame): FuzzTrace.print("  -> \(socket) \(FuzzTrace.text(frame))")
                case .close(let socket, let code, let reason): FuzzTrace.print("  -> \(socket) close \(code) \(reason)")
                default: break
                }
            }
            for check in output.tokenChecks { FuzzTrace.print("  token check \(check.socket) \(check.token)") }
            for command in output.commands {
                guard case .send(let socket, let frame) = command else { continue }
                // JSONScanner rather than JSONDecoder: the same strict grammar, and several
                // times faster, which matters at one check per frame sent.
                guard let members = try? JSONScanner.topLevelMembers(of: frame), let type = CallFrameEntry.string("type", in: members, of: frame) else {
                    return FuzzFinding("sent a frame that is not an object with a string type: \(String(decoding: frame, as: UTF8.self).prefix(300))")
                }
                if type == "error", let error = members.last(where: { $0.key == "error" }),
                    let inner = try? JSONScanner.topLevelMembers(of: Array(frame[error.value])),
                    CallFrameEntry.string("code", in: inner, of: Array(frame[error.value])) == SwitchboardError.Code.internalError.rawValue
                {
                    return FuzzFinding("answered with an internal error: \(String(decoding: frame, as: UTF8.self).prefix(300))")
                }
                if let member = members.last(where: { $0.key == "seq" }), let seq = Double(String(decoding: frame[member.value], as: UTF8.self)) {
                    if let last = lastSeq[socket], seq <= last {
                        return FuzzFinding("event seq \(seq) after \(last) on \(socket): \(String(decoding: frame, as: UTF8.self).prefix(300))")
                    }
                    lastSeq[socket] = seq
                }
            }
            return nil
        }
    }

    /// The string member `key` of a scanned object, if it is one.
    static func string(_ key: String, in members: [JSONScanner.Member], of bytes: [UInt8]) -> String? {
        members.last { $0.key == key }.flatMap { JSONScanner.decodeString(bytes, $0.value) }
    }

    /// Deterministic ids (`id-1`, `id-2`, …) so an input always replays the same way.
    final class IDSource {
        var counter: Int
        init(counter: Int) { self.counter = counter }
        func next() -> String {
            counter += 1
            return "id-\(counter)"
        }
    }
}
