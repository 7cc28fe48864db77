import Foundation

extension Date {
    /// This wall-clock time as a ``MonotonicTime``, for token buckets fed by wall-clock inputs.
    var tick: MonotonicTime { MonotonicTime(nanoseconds: Int64(timeIntervalSince1970 * 1e9)) }
}

extension CallGateway {
    /// A full request budget for a new socket.
    func messageBucket(_ now: Date) -> MessageBudget {
        MessageBudget(rate: configuration.messageRate, burst: configuration.messageBurst, now: now.tick)
    }

    /// Spends a request of `socket`'s budget. Past it the request is answered `rate_limited`;
    /// a socket that floods past a whole burst of refusals too is closed (1008).
    mutating func admitRequest(_ socket: ConnectionID, id: JSONValue, now: Date, into output: inout CallGatewayOutput) -> Bool {
        guard var state = sockets[socket] else { return false }
        defer { sockets[socket] = state }
        switch state.bucket.spend(now: now.tick) {
        case .admitted:
            return true
        case .refused:
            output.limitedRequests += 1
            let error = SwitchboardError(.rateLimited, "more than \(configuration.messageRate) requests a second; slow down")
            respond(socket, id: id, .failure(error), into: &output)
        case .flooding:
            output.limitedRequests += 1
            output.commands.append(.close(socket, .policyViolation, reason: "message flood"))
        case .dropped:
            break
        }
        return false
    }

    /// The lockout a failed authentication counts against: the user at the address when a
    /// genuine token named one, else the whole address.
    static func authFailureKey(_ address: String, _ user: UserID?) -> String {
        guard let user else { return address }
        return address + "\u{0}" + user.rawValue
    }

    /// Counts a failed authentication from `address` (by `user`, when a genuine token named one).
    mutating func countAuthFailure(from address: String, user: UserID? = nil, at now: Date) {
        let key = Self.authFailureKey(address, user)
        var bucket = authFailures[key] ?? TokenBucket(rate: configuration.authFailuresPerMinute / 60, burst: configuration.authFailureBurst, now: now.tick)
        _ = bucket.take(now: now.tick)
        authFailures[key] = bucket
    }

    /// Whether `address` (or `user` at it) has used up its failed authentications for now.
    func isBlocked(_ address: String, user: UserID? = nil, now: Date) -> Bool {
        guard let bucket = authFailures[Self.authFailureKey(address, user)] else { return false }
        return bucket.available(now: now.tick) < 1
    }

    /// Client connections of `user` that hold a socket.
    func attachedCount(of user: UserID) -> Int {
        (userClients[user] ?? []).count { clients[$0]?.socket != nil }
    }

    /// Forgets failure buckets that have refilled (bounded memory).
    mutating func pruneAuthFailures(now: Date) {
        authFailures = authFailures.filter { $0.value.available(now: now.tick) < $0.value.burst }
    }
}
