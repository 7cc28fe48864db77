import Foundation
import SwitchboardCore

extension SFUDirectory {
    /// Every SFU, by id.
    public func list() -> [SFUView] {
        queue.sync {
            let now = clock.now()
            return records.keys.sorted().compactMap { view($0, now: now) }
        }
    }

    public func get(_ id: SFUID) -> SFUView? {
        queue.sync { view(id, now: clock.now()) }
    }

    /// Adds an SFU; `conflict` if the id exists.
    public func create(_ definition: SFUDefinition) throws(SwitchboardError) -> SFUView {
        try serially { () throws(SwitchboardError) -> SFUView in
            let record = try validate(definition, id: definition.id)
            guard records[record.id] == nil else { throw SwitchboardError(.conflict, "SFU \(record.id) exists; use PUT to replace it") }
            return try commit(record)
        }
    }

    /// Creates or replaces an SFU's definition; its run-time load and heartbeat are kept.
    public func replace(_ id: SFUID, with definition: SFUDefinition) throws(SwitchboardError) -> SFUView {
        try serially { () throws(SwitchboardError) -> SFUView in
            if let given = definition.id, given != id.rawValue {
                throw SwitchboardError(.invalidRequest, "id in the body (\(given)) differs from the path (\(id))")
            }
            var record = try validate(definition, id: id.rawValue)
            if let existing = records[id] {
                record.state = existing.state
                record.reportedLoad = existing.reportedLoad
                record.lastHeartbeatAt = existing.lastHeartbeatAt
            }
            return try commit(record)
        }
    }

    /// Swaps in a reloaded region table and IP-prefix table (SIGHUP).
    public func replaceRegions(_ resolver: LocationResolver) throws(SwitchboardError) {
        queue.sync { self.resolver = resolver }
    }

    /// Loads a seed list (startup, SIGHUP): each SFU is created or its definition replaced.
    public func seed(_ definitions: [SFUDefinition]) throws(SwitchboardError) {
        for definition in definitions {
            guard let raw = definition.id, let id = SFUID(raw) else {
                throw SwitchboardError(.invalidConfiguration, "SFU seed: every entry needs a valid id")
            }
            _ = try replace(id, with: definition)
        }
    }

    /// Removes an SFU; its calls are moved first, as if it had died.
    public func delete(_ id: SFUID) throws(SwitchboardError) -> [Reassignment] {
        try serially { () throws(SwitchboardError) -> [Reassignment] in
            guard records[id] != nil else { throw SwitchboardError(.notFound, "no SFU \(id)") }
            let moved = try failover(id, now: clock.now())
            do { try store.deleteSFU(id) } catch { throw storeFailure(error) }
            records[id] = nil
            lastPolls[id] = nil
            nodes[id] = nil
            registeredAt[id] = nil
            return moved
        }
    }

    /// Stops new calls on an SFU; its calls stay.
    public func drain(_ id: SFUID) throws(SwitchboardError) -> SFUView {
        try serially { () throws(SwitchboardError) -> SFUView in
            guard var record = records[id] else { throw SwitchboardError(.notFound, "no SFU \(id)") }
            record.state = .draining
            return try commit(record)
        }
    }

    /// A load report. `credential` must be the SFU's secret unless the caller holds the admin
    /// token. A heartbeat brings a `down` SFU back to `active`; a draining one stays draining.
    public func heartbeat(_ id: SFUID, load: Int, credential: String?, isAdmin: Bool) throws(SwitchboardError) -> SFUView {
        try serially { () throws(SwitchboardError) -> SFUView in
            // Without the admin token an unknown id looks like a wrong credential: ids are not revealed.
            guard var record = records[id], var node = nodes[id] else {
                throw isAdmin ? SwitchboardError(.notFound, "no SFU \(id)") : Self.badCredential
            }
            guard isAdmin || (record.secret.map { ConstantTime.equals(credential ?? "", $0) } ?? false) else { throw Self.badCredential }
            guard record.kind == .heartbeat else {
                throw SwitchboardError(.conflict, "SFU \(id) is a \(record.kind.rawValue) SFU: Switchboard polls it, heartbeats are refused")
            }
            guard (0...Self.maximumLoad).contains(load) else {
                throw SwitchboardError(.invalidRequest, "load must be 0–\(Self.maximumLoad)")
            }
            let view = try report(load: load, record: &record, node: &node, at: wallClock())
            metrics.heartbeats.increment()
            return view
        }
    }

    /// A fresh load figure (heartbeat or poll): the SFU is alive now, a `down` one comes back
    /// `active` (a draining one stays draining), pending assignments are folded into the load.
    func report(load: Int, record: inout SFURecord, node: inout SFUNode, at wallNow: Date) throws(SwitchboardError) -> SFUView {
        record.reportedLoad = load
        record.lastHeartbeatAt = wallNow
        if record.state == .down { record.state = .active }
        node.reportedLoad = load
        node.pending = 0
        node.lastHeartbeat = clock.now()
        node.state = record.state
        return try commit(record, node: node)
    }

    /// The largest load a heartbeat may report (capacity is at most 1,000,000).
    public static let maximumLoad = 10_000_000

    static let badCredential = SwitchboardError(.unauthenticated, "a valid SFU credential or the admin token is required")

    func commit(_ record: SFURecord, node: SFUNode? = nil) throws(SwitchboardError) -> SFUView {
        do { try store.saveSFU(record) } catch { throw storeFailure(error) }
        guard var updated = node ?? Self.node(from: record) else { throw SwitchboardError(.invalidRequest, "invalid coordinates") }
        if node == nil, let existing = nodes[record.id] {
            updated.lastHeartbeat = existing.lastHeartbeat
            updated.pending = existing.pending
            updated.reportedLoad = existing.reportedLoad
        }
        records[record.id] = record
        nodes[record.id] = updated
        if registeredAt[record.id] == nil { registeredAt[record.id] = clock.now() }
        guard let view = view(record.id, now: clock.now()) else { throw SwitchboardError(.internalError, "SFU vanished") }
        return view
    }

    func storeFailure(_ error: any Error) -> SwitchboardError {
        logger.error("store write failed", metadata: ["error": "\(error)"])
        return SwitchboardError(.unavailable, "the store cannot be written")
    }

    private func validate(_ definition: SFUDefinition, id: String?) throws(SwitchboardError) -> SFURecord {
        guard let raw = id, let sfuID = SFUID(raw) else {
            throw SwitchboardError(.invalidRequest, "id must be 1–64 letters, digits, '.', '_' or '-'")
        }
        guard let kind = SFUKind(rawValue: definition.kind ?? SFUKind.heartbeat.rawValue) else {
            throw SwitchboardError(.invalidRequest, "kind must be heartbeat or janus")
        }
        let janus = try Self.janusAccess(definition, kind: kind)
        guard (1...1_000_000).contains(definition.capacity) else { throw SwitchboardError(.invalidRequest, "capacity must be 1–1000000") }
        let weight = definition.weight ?? 1
        guard weight.isFinite, (0.01...100).contains(weight) else { throw SwitchboardError(.invalidRequest, "weight must be 0.01–100") }
        let point = try location(definition)
        if let secret = definition.secret, secret.count < 16 {
            throw SwitchboardError(.invalidRequest, "secret must be at least 16 characters")
        }
        return SFURecord(
            id: sfuID, url: definition.url, region: definition.region?.lowercased(), latitude: point.latitude, longitude: point.longitude,
            capacity: definition.capacity, weight: weight, state: .active, secret: definition.secret, kind: kind, janus: janus)
    }

    /// The kind's own rules: a heartbeat SFU has a ws(s) URL and may have a heartbeat secret; a
    /// Janus SFU has a ws(s) or http(s) client URL (its WebSocket or HTTP API), a `janus` object,
    /// and no heartbeat secret.
    static func janusAccess(_ definition: SFUDefinition, kind: SFUKind) throws(SwitchboardError) -> JanusAccess? {
        switch kind {
        case .heartbeat:
            guard URLText.isWebSocket(definition.url) else { throw SwitchboardError(.invalidRequest, "url must be a ws:// or wss:// URL") }
            guard definition.janus == nil else { throw SwitchboardError(.invalidRequest, "janus is only for SFUs of kind janus") }
            return nil
        case .janus:
            guard URLText.isWebSocket(definition.url) || URLText.isHTTP(definition.url) else {
                throw SwitchboardError(.invalidRequest, "url must be the Janus API's ws://, wss://, http:// or https:// URL")
            }
            guard definition.secret == nil else {
                throw SwitchboardError(.invalidRequest, "secret is for heartbeat SFUs; a janus SFU is polled")
            }
            guard let janus = definition.janus else {
                throw SwitchboardError(.invalidRequest, "a janus SFU needs janus: {admin_url, admin_secret_env or admin_secret_file}")
            }
            return try janus.access()
        }
    }

    private func location(_ definition: SFUDefinition) throws(SwitchboardError) -> GeoPoint {
        if let latitude = definition.latitude, let longitude = definition.longitude {
            guard let point = GeoPoint(latitude: latitude, longitude: longitude) else {
                throw SwitchboardError(.invalidRequest, "latitude must be in [-90, 90] and longitude in [-180, 180]")
            }
            return point
        }
        guard let region = definition.region else { throw SwitchboardError(.invalidRequest, "give region or latitude and longitude") }
        guard let point = resolver.regions[region.lowercased()] else { throw SwitchboardError(.invalidRequest, "unknown region \(region)") }
        return point
    }
}
