import Foundation
import SwitchboardCore

/// The in-memory twin of the SQLite call store: the same orderings, filters, cursor paging and
/// all-or-nothing ``apply(_:)``, with dictionaries behind a lock. It can be told to fail.
///
/// Records read back as SQLite gives them back: times to the millisecond, JSON as its text
/// parses, identifiers compared byte for byte (`CallStoreContract` holds both to that).
/// Its cursors are opaque and URL-safe like the SQLite store's, but not interchangeable with them.
public final class InMemoryCallStore: CallStore, @unchecked Sendable {
    let lock = NSLock()
    // Cids are ASCII, so `CallCID` equality is already byte equality.
    private var calls: [CallCID: CallRecord] = [:]
    private var members: [CallCID: [StoredText: MemberRecord]] = [:]
    private var sessions: [StoredText: SessionRecord] = [:]
    private var events: [CallCID: [CallEventRecord]] = [:]
    private var connections: [StoredText: ConnectionRecord] = [:]
    private var placements: [CallCID: PlacementRecord] = [:]
    // The webhook outbox and push devices (`InMemoryCallStore+Webhooks.swift` reads them).
    var webhookMessages: [StoredText: WebhookMessage] = [:]
    var deliveries: [DeliveryKey: WebhookDelivery] = [:]
    var endpointStates: [StoredText: WebhookEndpointState] = [:]
    var devices: [StoredDeviceKey: DeviceRecord] = [:]
    private var failNext = false
    private var failAll = false
    private var failReads = false
    private var applied: [[CallMutation]] = []

    public init() {}

    /// Throws the injected failure of ``failAllApplies`` (for writes other than ``apply(_:)``).
    func checkNotFailing() throws {
        if failAll { throw SwitchboardError(.unavailable, "store failure injected") }
    }

    /// When set, the next ``apply(_:)`` throws `unavailable` and changes nothing; then it clears.
    public var failNextApply: Bool {
        get { lock.withLock { failNext } }
        set { lock.withLock { failNext = newValue } }
    }

    /// While set, every ``apply(_:)`` throws `unavailable` and changes nothing.
    public var failAllApplies: Bool {
        get { lock.withLock { failAll } }
        set { lock.withLock { failAll = newValue } }
    }

    /// While set, ``loadLiveState()`` throws `unavailable` too (the store can be neither written
    /// nor read, as when its server is away).
    public var failAllReads: Bool {
        get { lock.withLock { failReads } }
        set { lock.withLock { failReads = newValue } }
    }

    /// Number of ``apply(_:)`` transactions committed (failed ones are not counted).
    public var applyCount: Int { lock.withLock { applied.count } }

    /// Every committed batch, oldest first.
    public var appliedBatches: [[CallMutation]] { lock.withLock { applied } }

    public func apply(_ mutations: [CallMutation]) throws {
        try lock.withLock {
            if failNext || failAll {
                failNext = false
                throw SwitchboardError(.unavailable, "store failure injected")
            }
            try CallMutation.validate(mutations)
            // Convert the whole batch first, in order: the SQLite store rolls back on the first refusal.
            let stored = try mutations.map(StoredValues.mutation)
            for mutation in stored { commit(mutation) }
            applied.append(mutations)
        }
    }

    private func commit(_ mutation: CallMutation) {
        switch mutation {
        case .saveCall(let call): calls[call.cid] = call
        case .saveMember(let member): members[member.cid, default: [:]][StoredText(member.userID.rawValue)] = member
        case .saveSession(let session): sessions[StoredText(session.sessionID.rawValue)] = session
        case .appendEvent(let event): events[event.cid, default: []].append(event)
        case .saveConnection(let connection): connections[StoredText(connection.id.rawValue)] = connection
        case .deleteConnection(let id): connections[StoredText(id.rawValue)] = nil
        case .savePlacement(let placement): CallCID(cid: placement.callID).map { placements[$0] = placement }
        case .deletePlacement(let cid): placements[cid] = nil
        case .enqueueWebhook(let message, let endpoints):
            // Inserted once: a message id seen before keeps its first message.
            if webhookMessages[StoredText(message.id)] == nil { webhookMessages[StoredText(message.id)] = message }
            for endpoint in endpoints { commit(.saveWebhookDelivery(WebhookDelivery(message, endpoint: endpoint))) }
        case .saveWebhookDelivery(let delivery): deliveries[DeliveryKey(delivery)] = delivery
        case .saveWebhookEndpoint(let state): endpointStates[StoredText(state.name)] = state
        case .saveDevice(let device): devices[StoredDeviceKey(device.key)] = device
        case .deleteDevice(let key): devices[StoredDeviceKey(key)] = nil
        }
    }

    public func loadLiveState() throws -> CallStateSnapshot {
        try lock.withLock {
            if failReads { throw SwitchboardError(.unavailable, "store failure injected") }
            let live = calls.values.filter(\.isLive).sorted { $0.cid < $1.cid }
            return CallStateSnapshot(
                calls: live,
                members: live.flatMap { sortedMembers($0.cid) },
                sessions: sessions.values.filter(\.isActive).sorted(by: Self.joinOrder),
                connections: connections.values.sorted { StoredText($0.id.rawValue) < StoredText($1.id.rawValue) },
                devices: devices.values.sorted(by: Self.deviceOrder))
        }
    }

    /// Committed placements, by call (the SQLite store keeps them in `call_placement`).
    public var committedPlacements: [CallCID: PlacementRecord] { lock.withLock { placements } }

    public func loadCall(_ cid: CallCID) throws -> (call: CallRecord, members: [MemberRecord])? {
        lock.withLock { calls[cid].map { ($0, sortedMembers(cid)) } }
    }

    public func callDetail(_ cid: CallCID, eventLimit: Int) throws -> CallDetail? {
        lock.withLock {
            guard let call = calls[cid] else { return nil }
            return CallDetail(
                call: call, members: sortedMembers(cid),
                sessions: sessions.values.filter { $0.cid == cid }.sorted(by: Self.joinOrder),
                events: Array(events[cid, default: []].suffix(max(0, eventLimit))))
        }
    }

    public func lastEvent(of cid: CallCID, type: String) throws -> CallEventRecord? {
        lock.withLock { events[cid]?.last { $0.type == type } }
    }

    public func listCalls(_ query: CallQuery) throws -> CallPage {
        let after = try query.cursor.map(Self.decodeCursor)
        let limit = query.limit.clamped(to: CallQuery.limits)
        // SQLite compares the bounds as stored times too.
        var query = query
        query.createdFrom = query.createdFrom.map(StoredValues.time)
        query.createdBefore = query.createdBefore.map(StoredValues.time)
        return lock.withLock {
            let matching = calls.values.filter { matches($0, query) }.sorted(by: Self.newestFirst)
            let rest = after.map { after in matching.filter { Self.newestFirst(after, $0) } } ?? matching
            let page = Array(rest.prefix(limit))
            let next = rest.count > limit ? page.last.map(Self.cursor) : nil
            return CallPage(calls: page, next: next)
        }
    }

    private func matches(_ call: CallRecord, _ query: CallQuery) -> Bool {
        switch query.state {
        case .live?: if !call.isLive { return false }
        case .ended?: if call.isLive { return false }
        case nil: break
        }
        if let type = query.type, StoredText(call.cid.type) != StoredText(type) { return false }
        if let member = query.member, members[call.cid]?[StoredText(member.rawValue)] == nil { return false }
        if let from = query.createdFrom, call.createdAt < from { return false }
        if let before = query.createdBefore, call.createdAt >= before { return false }
        return true
    }

    private func sortedMembers(_ cid: CallCID) -> [MemberRecord] {
        (members[cid] ?? [:]).values.sorted {
            ($0.addedAt, StoredText($0.userID.rawValue)) < ($1.addedAt, StoredText($1.userID.rawValue))
        }
    }

    private static func joinOrder(_ lhs: SessionRecord, _ rhs: SessionRecord) -> Bool {
        (lhs.joinedAt, StoredText(lhs.sessionID.rawValue)) < (rhs.joinedAt, StoredText(rhs.sessionID.rawValue))
    }

    private static func newestFirst(_ lhs: CallRecord, _ rhs: CallRecord) -> Bool {
        (lhs.createdAt, lhs.cid) > (rhs.createdAt, rhs.cid)
    }

    // MARK: - Cursors

    /// Unpadded base64url, as the SQLite store writes its cursors, so that it needs no escaping in a URL.
    private static func cursor(_ call: CallRecord) -> String {
        // `Double.description` reads back to the same value, and a `Date` is its interval since the
        // reference date, so the cursor date is exact (through 1970 it may be off in its last bit).
        let base64 = Data("\(call.createdAt.timeIntervalSinceReferenceDate)|\(call.cid.cid)".utf8).base64EncodedString()
        return base64.replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
            .replacingOccurrences(of: "=", with: "")
    }

    /// A stand-in for the last call of the previous page, compared by (created_at, cid) only.
    private static func decodeCursor(_ text: String) throws -> CallRecord {
        var base64 = text.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        base64 += String(repeating: "=", count: (4 - base64.utf8.count % 4) % 4)
        guard let data = Data(base64Encoded: base64), let decoded = String(data: data, encoding: .utf8) else {
            throw SwitchboardError(.invalidRequest, "invalid cursor")
        }
        let parts = decoded.split(separator: "|", omittingEmptySubsequences: false).map(String.init)
        guard parts.count == 2, let seconds = Double(parts[0]), seconds.isFinite, let cid = CallCID(cid: parts[1]),
            let nobody = UserID("cursor")
        else { throw SwitchboardError(.invalidRequest, "invalid cursor") }
        return CallRecord(cid: cid, createdBy: nobody, createdAt: Date(timeIntervalSinceReferenceDate: seconds))
    }
}

/// Text compared as SQLite's BINARY collation compares it: byte for byte in UTF-8. Swift's `String`
/// calls canonically equivalent spellings equal (`Å` as U+00C5 and as U+212B), SQLite keeps them apart.
struct StoredText: Hashable, Comparable {
    let utf8: [UInt8]
    init(_ text: String) { utf8 = Array(text.utf8) }
    static func < (lhs: Self, rhs: Self) -> Bool { lhs.utf8.lexicographicallyPrecedes(rhs.utf8) }
}

/// Mutations as the SQLite store stores them, or its refusal, checked in the same order.
enum StoredValues {
    static func mutation(_ mutation: CallMutation) throws -> CallMutation {
        switch mutation {
        case .saveCall(var call):
            call.createdAt = time(call.createdAt)
            call.endedAt = call.endedAt.map(time)
            call.autoCancelAt = call.autoCancelAt.map(time)
            call.emptyDeadline = call.emptyDeadline.map(time)
            call.custom = json(call.custom)
            return .saveCall(call)
        case .saveMember(var member):
            member.addedAt = time(member.addedAt)
            member.ringUpdatedAt = member.ringUpdatedAt.map(time)
            member.ringDeadline = member.ringDeadline.map(time)
            return .saveMember(member)
        case .saveSession(var session):
            session.joinedAt = time(session.joinedAt)
            session.leftAt = session.leftAt.map(time)
            // The location column comes before the media column.
            let location = try session.location.map(jsonText)
            let media = try jsonText(session.media)
            session.location = location.flatMap { decode(LocationHint.self, $0) }
            session.media = decode(MediaState.self, media) ?? MediaState()
            return .saveSession(session)
        case .appendEvent(var event):
            event.at = time(event.at)
            event.payload = json(event.payload)
            return .appendEvent(event)
        case .saveConnection(var connection):
            connection.connectedAt = time(connection.connectedAt)
            connection.tokenExpiresAt = time(connection.tokenExpiresAt)
            connection.detachedAt = connection.detachedAt.map(time)
            return .saveConnection(connection)
        case .enqueueWebhook(var message, let endpoints):
            message.createdAt = time(message.createdAt)
            message.data = json(message.data)
            return .enqueueWebhook(message, endpoints: endpoints)
        case .saveWebhookDelivery(var delivery):
            delivery.createdAt = time(delivery.createdAt)
            delivery.nextAttemptAt = delivery.nextAttemptAt.map(time)
            delivery.lastAttemptAt = delivery.lastAttemptAt.map(time)
            return .saveWebhookDelivery(delivery)
        case .saveWebhookEndpoint(var state):
            state.previousUntil = state.previousUntil.map(time)
            state.disabledAt = state.disabledAt.map(time)
            return .saveWebhookEndpoint(state)
        case .saveDevice(var device):
            device.createdAt = time(device.createdAt)
            return .saveDevice(device)
        case .deleteConnection, .savePlacement, .deletePlacement, .deleteDevice: return mutation
        }
    }

    /// To the nearest millisecond, as GRDB's `yyyy-MM-dd HH:mm:ss.SSS` text reads back: it
    /// rounds, and rebuilds the `Date` from the reference date.
    static func time(_ date: Date) -> Date {
        Date(timeIntervalSinceReferenceDate: (date.timeIntervalSinceReferenceDate * 1000).rounded() / 1000)
    }

    /// As the stored JSON text parses: non-finite numbers become `null`, too deep a document `null`.
    private static func json(_ value: JSONValue) -> JSONValue { JSONValue.parse(text: value.text) }

    /// Media and locations are stored through `JSONEncoder`, which refuses non-finite numbers.
    private static func jsonText(_ value: some Encodable) throws -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = .sortedKeys
        do {
            return String(decoding: try encoder.encode(value), as: UTF8.self)
        } catch {
            throw SwitchboardError(.unavailable, "call store: \(error)")
        }
    }

    private static func decode<T: Decodable>(_ type: T.Type, _ text: String) -> T? {
        try? JSONDecoder().decode(type, from: Data(text.utf8))
    }
}
