import Foundation
import SwitchboardCore

/// The in-memory twin of the SQLite location table and placements; can be told to fail.
public final class InMemorySFUStore: SFUStore, @unchecked Sendable {
    private let lock = NSLock()
    private var sfus: [SFUID: SFURecord] = [:]
    private var placements: [String: PlacementRecord] = [:]
    private var failing = false
    /// Number of `failover` transactions committed.
    public private(set) var failoverCount = 0

    public init() {}

    public func setFailing(_ value: Bool) { lock.withLock { failing = value } }

    private func check() throws {
        if failing { throw SwitchboardError(.unavailable, "disk full") }
    }

    public func allSFUs() throws -> [SFURecord] { lock.withLock { sfus.values.sorted { $0.id < $1.id } } }
    public func saveSFU(_ record: SFURecord) throws { try lock.withLock { try check(); sfus[record.id] = record } }
    public func deleteSFU(_ id: SFUID) throws { try lock.withLock { try check(); sfus[id] = nil } }
    public func allPlacements() throws -> [PlacementRecord] { lock.withLock { placements.values.sorted { $0.callID < $1.callID } } }
    /// Commits the placement mutations of a batch, standing in for the call store's placement
    /// table (``SFUDirectory/place(callID:participants:commit:)`` in tests).
    public func commit(_ mutations: [CallMutation]) throws {
        try lock.withLock {
            try check()
            for mutation in mutations {
                switch mutation {
                case .savePlacement(let record): placements[record.callID] = record
                case .deletePlacement(let cid): placements[cid.cid] = nil
                default: break
                }
            }
        }
    }

    public private(set) var regionCount = 0
    public func replaceRegions(_ regions: RegionTable) throws { try lock.withLock { try check(); regionCount = regions.regions.count } }

    /// The call store a failover's webhook rows go to (the SQLite store holds both in one file).
    public var outbox: InMemoryCallStore?

    public func failover(down: SFUID, moves: [PlacementRecord], webhooks: [CallMutation]) throws {
        try lock.withLock {
            try check()
            if !webhooks.isEmpty {
                guard let outbox else { throw SwitchboardError(.unavailable, "no call store for the failover's webhooks") }
                try outbox.apply(webhooks)
            }
            sfus[down]?.state = .down
            for move in moves { placements[move.callID] = move }
            failoverCount += 1
        }
    }
}
