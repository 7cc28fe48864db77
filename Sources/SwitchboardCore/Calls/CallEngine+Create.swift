import Foundation

extension CallEngine {
    /// `call.get_or_create`: the call, created (and rung when asked and allowed) if the id is new.
    public mutating func getOrCreate(
        _ cid: CallCID, members: [UserID], ring: Bool, custom: JSONValue, by actor: CallActor, now: Date, out: inout CallOutput
    ) throws(SwitchboardError) -> JSONValue {
        if let existing = calls[cid] {
            try checkVisible(existing, to: actor)
            return Self.result(existing, created: false)
        }
        try create(cid, members: members, ring: ring, custom: custom, by: actor, now: now, out: &out)
        return Self.result(calls[cid]!, created: true)
    }

    /// `call.get`: the call's state; members-only calls are visible to members and admins.
    public func get(_ cid: CallCID, by actor: CallActor) throws(SwitchboardError) -> JSONValue {
        guard let call = calls[cid] else { throw SwitchboardError(.callNotFound, "no call \(cid)") }
        try checkVisible(call, to: actor)
        return call.stateJSON
    }

    static func result(_ call: LiveCall, created: Bool) -> JSONValue {
        guard case .object(var fields) = call.stateJSON else { return .null }
        fields["created"] = .bool(created)
        return .object(fields)
    }

    func checkVisible(_ call: LiveCall, to actor: CallActor) throws(SwitchboardError) {
        guard call.settings.membersOnly, !actor.isAdmin, call.members[actor.user] == nil else { return }
        throw SwitchboardError(.notAMember, "\(actor.user) is not a member of \(call.cid)")
    }

    /// A call about to be created: everything checked, nothing changed yet.
    struct CreatePlan {
        var cid: CallCID
        var settings: CallTypeSettings
        var everyone: [UserID]
        var ring: Bool
        var custom: JSONValue
    }

    /// Checks a creation (type, members, ringing, ring rate) without changing any call. The
    /// only state it touches is the callees' ring buckets, once every check has passed.
    mutating func planCreate(
        _ cid: CallCID, members: [UserID], ring: Bool, custom: JSONValue, by actor: CallActor, now: Date
    ) throws(SwitchboardError) -> CreatePlan {
        let settings = try settings(for: cid.type)
        var everyone = [actor.user]
        everyone.append(contentsOf: members.filter { $0 != actor.user })
        guard everyone.count <= configuration.maxMembers else {
            throw SwitchboardError(.invalidRequest, "a call may have at most \(configuration.maxMembers) members")
        }
        if ring {
            guard settings.ringing else { throw SwitchboardError(.invalidRequest, "calls of type \(cid.type) do not ring") }
            guard everyone.count > 1 else { throw SwitchboardError(.invalidRequest, "ring needs at least one member besides the caller") }
        }
        if !actor.isAdmin {
            try take(1, from: \.createBuckets, for: actor.user, rate: configuration.createsPerMinute, burst: configuration.createBurst, now: now,
                "\(actor.user) has created too many calls; try again later")
        }
        if ring { try takeRingTokens(for: Array(everyone.dropFirst()), now: now) }
        return CreatePlan(cid: cid, settings: settings, everyone: everyone, ring: ring, custom: custom)
    }

    /// Creates a call with its creator and `members`, and rings them when `ring` is set.
    mutating func create(
        _ cid: CallCID, members: [UserID], ring: Bool, custom: JSONValue, by actor: CallActor, now: Date, out: inout CallOutput
    ) throws(SwitchboardError) {
        let plan = try planCreate(cid, members: members, ring: ring, custom: custom, by: actor, now: now)
        apply(plan, by: actor, now: now, out: &out)
    }

    /// Carries out a checked creation.
    mutating func apply(_ plan: CreatePlan, by actor: CallActor, now: Date, out: inout CallOutput) {
        let cid = plan.cid
        let record = CallRecord(cid: cid, createdBy: actor.user, createdAt: now, custom: plan.custom)
        calls[cid] = LiveCall(record: record, settings: plan.settings)
        retime(cid)
        out.mutations.append(.saveCall(record))
        for user in plan.everyone {
            setMember(MemberRecord(cid: cid, userID: user, addedAt: now), in: cid, out: &out)
        }
        let names = JSONValue.array(plan.everyone.map { .string($0.rawValue) })
        log("call.created", calls[cid]!, .object(["created_by": .string(actor.user.rawValue), "members": names]), now: now, out: &out)
        out.metrics.append(.callStarted)
        if plan.ring {
            startRing(cid, caller: actor, now: now, out: &out)
        } else {
            armEmptyTimer(cid, now: now, out: &out)
        }
    }

    /// Spends `count` tokens of `user`'s bucket in `table` (per-minute `rate`), or throws
    /// `rate_limited` with `message` and spends none.
    mutating func take(
        _ count: Int, from table: WritableKeyPath<CallEngine, [UserID: TokenBucket]>, for user: UserID, rate: Double, burst: Double, now: Date,
        _ message: @autoclosure () -> String
    ) throws(SwitchboardError) {
        guard count > 0 else { return }
        let tick = MonotonicTime(nanoseconds: Int64(now.timeIntervalSince1970 * 1e9))
        var bucket = self[keyPath: table][user] ?? TokenBucket(rate: rate / 60, burst: burst, now: tick)
        guard bucket.available(now: tick) >= Double(count) else { throw SwitchboardError(.rateLimited, message()) }
        for _ in 0..<count { _ = bucket.take(now: tick) }
        self[keyPath: table][user] = bucket
    }

    /// Drops buckets that have refilled (at most once a minute), so users who stopped calling
    /// leave memory; a dropped bucket comes back full, as it would have been.
    mutating func pruneBuckets(now: Date) {
        if let last = bucketsPrunedAt, now.timeIntervalSince(last) < 60 { return }
        bucketsPrunedAt = now
        let tick = MonotonicTime(nanoseconds: Int64(now.timeIntervalSince1970 * 1e9))
        for table in [\CallEngine.ringBuckets, \.createBuckets, \.inviteBuckets] {
            self[keyPath: table] = self[keyPath: table].filter { $0.value.available(now: tick) < $0.value.burst }
        }
    }

    /// Spends one ring token of each receiver, or none at all when any of them is out.
    mutating func takeRingTokens(for users: [UserID], now: Date) throws(SwitchboardError) {
        let tick = MonotonicTime(nanoseconds: Int64(now.timeIntervalSince1970 * 1e9))
        var buckets = ringBuckets
        for user in users {
            var bucket = buckets[user] ?? TokenBucket(rate: configuration.ringRatePerMinute / 60, burst: configuration.ringBurst, now: tick)
            guard bucket.take(now: tick) else {
                throw SwitchboardError(.rateLimited, "\(user) has been rung too often; try again later")
            }
            buckets[user] = bucket
        }
        ringBuckets = buckets
    }

    /// Rings every member but the caller: busy ones are rejected at once when the type says so.
    mutating func startRing(_ cid: CallCID, caller: CallActor, now: Date, out: inout CallOutput) {
        guard var record = calls[cid]?.record, let settings = calls[cid]?.settings else { return }
        record.rung = true
        record.autoCancelAt = now.addingTimeInterval(settings.autoCancelTimeout.seconds)
        record.emptyDeadline = nil
        saveRecord(record, out: &out)
        let deadline = now.addingTimeInterval(settings.incomingTimeout.seconds)
        var rung: [UserID] = []
        for member in calls[cid]!.members.values.sorted(by: { $0.userID < $1.userID }) where member.userID != caller.user {
            var next = member
            next.ringUpdatedAt = now
            if settings.busyPolicy == .reject, isBusy(member.userID, otherThan: cid) {
                next.ringState = .rejected
                next.ringReason = .busy
                setMember(next, in: cid, out: &out)
                notifyRejected(next, in: cid, by: nil, now: now, out: &out)
                out.metrics.append(.ringOutcome("busy", answeredAfter: nil))
                continue
            }
            next.ringState = .ringing
            next.ringDeadline = deadline
            setMember(next, in: cid, out: &out)
            rung.append(member.userID)
        }
        // After the loop, so every `call.ring` shows every member's final ring state.
        for user in rung { out.notices.append(ringNotice(calls[cid]!, to: user)) }
        log("call.ring", calls[cid]!, .object(["members": .array(calls[cid]!.ringingMembers.map { .string($0.rawValue) })]), now: now, out: &out)
        evaluateRing(cid, now: now, out: &out)
    }

    /// `call.ring` for every device of `user`.
    func ringNotice(_ call: LiveCall, to user: UserID) -> CallNotice {
        let deadline = call.members[user]?.ringDeadline.map(JSONValue.time) ?? .null
        return CallNotice(
            type: "call.ring", cid: call.cid,
            data: .object(["call": call.json, "members": call.membersJSON, "from": .string(call.record.createdBy.rawValue), "ring_deadline": deadline]),
            users: [user])
    }

    /// `call.ring` for every call still ringing `user`, for a device that just connected.
    public func pendingRings(for user: UserID) -> [CallNotice] {
        let elsewhere = knownRings.values.filter { calls[$0.cid] == nil && $0.record.isLive && $0.members[user]?.ringState == .ringing }.map(\.cid)
        return Set((ringingCalls[user] ?? []).union(elsewhere)).sorted().compactMap { cid in (calls[cid] ?? knownRings[cid]).map { ringNotice($0, to: user) } }
    }

    /// `call.invite`: adds members (no ringing). Members, participants and admins may invite.
    public mutating func invite(_ cid: CallCID, members: [UserID], by actor: CallActor, now: Date, out: inout CallOutput) throws(SwitchboardError) -> JSONValue {
        let call = try live(cid)
        guard actor.isAdmin || call.members[actor.user] != nil || call.hasSession(of: actor.user) else {
            throw SwitchboardError(.notAMember, "only members may invite to \(cid)")
        }
        let added = members.filter { call.members[$0] == nil }
        guard call.members.count + added.count <= configuration.maxMembers else {
            throw SwitchboardError(.invalidRequest, "a call may have at most \(configuration.maxMembers) members")
        }
        if !actor.isAdmin {
            try take(added.count, from: \.inviteBuckets, for: actor.user, rate: configuration.invitesPerMinute, burst: configuration.inviteBurst, now: now,
                "\(actor.user) has invited too many members; try again later")
        }
        for user in added { setMember(MemberRecord(cid: cid, userID: user, addedAt: now), in: cid, out: &out) }
        let updated = calls[cid]!
        if !added.isEmpty {
            let names = JSONValue.array(added.map { .string($0.rawValue) })
            log("call.members_added", updated, .object(["members": names, "by": .string(actor.user.rawValue)]), now: now, out: &out)
            out.notices.append(
                CallNotice(
                    type: "call.members_added", cid: cid, data: .object(["call": updated.json, "members": updated.membersJSON, "added": names]),
                    connections: updated.participantConnections, users: Set(added)))
        }
        return updated.stateJSON
    }
}
