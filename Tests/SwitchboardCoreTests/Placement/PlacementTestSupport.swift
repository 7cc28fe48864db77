import Foundation
import SwitchboardCore
import XCTest


/// Fixtures shared by the placement tests.
enum Fixture {
    /// Monotonic time `milliseconds` after the origin.
    static func time(_ milliseconds: Int64) -> MonotonicTime { MonotonicTime(nanoseconds: milliseconds * 1_000_000) }

    /// "Now" in every test that does not care: far enough from zero that stale heartbeats fit before it.
    static let now = time(1_000_000)

    static func point(_ latitude: Double, _ longitude: Double, file: StaticString = #filePath, line: UInt = #line) -> GeoPoint {
        guard let point = GeoPoint(latitude: latitude, longitude: longitude) else {
            XCTFail("bad fixture point (\(latitude), \(longitude))", file: file, line: line)
            return GeoPoint(latitude: 0, longitude: 0)!
        }
        return point
    }

    static func id(_ text: String) -> SFUID { SFUID(text)! }

    /// Real places (city centres or airports), as region codes.
    static let regions: [String: GeoPoint] = [
        "fra": point(50.1109, 8.6821),  // Frankfurt
        "lhr": point(51.4700, -0.4543),  // London Heathrow
        "ams": point(52.3676, 4.9041),  // Amsterdam
        "iad": point(38.9531, -77.4565),  // Ashburn / Dulles
        "sfo": point(37.6213, -122.3790),  // San Francisco
        "nrt": point(35.7720, 140.3929),  // Tokyo Narita
        "sin": point(1.3644, 103.9915),  // Singapore
        "bom": point(19.0896, 72.8656),  // Mumbai
        "dxb": point(25.2532, 55.3657),  // Dubai
        "syd": point(-33.9399, 151.1753),  // Sydney
    ]

    static func region(_ code: String) -> GeoPoint { regions[code]! }

    /// An active SFU at a region with a fresh heartbeat, unless told otherwise.
    static func node(
        _ name: String, at code: String, capacity: Int = 100, weight: Double = 1, state: SFUNode.State = .active,
        heartbeat: MonotonicTime?? = .some(now), load: Int = 0, pending: Int = 0
    ) -> SFUNode {
        SFUNode(
            id: id(name), url: "wss://\(name).example/sfu", region: code, location: region(code), capacity: capacity,
            weight: weight, state: state, lastHeartbeat: heartbeat ?? nil, reportedLoad: load, pending: pending)
    }

    /// A participant whose coordinates are known.
    static func at(_ code: String, rtts: [String: Double] = [:]) -> ResolvedLocation {
        ResolvedLocation(
            source: rtts.isEmpty ? .coordinates : .rtt, point: region(code),
            rtts: Dictionary(uniqueKeysWithValues: rtts.map { (id($0.key), $0.value) }))
    }

    static func at(_ point: GeoPoint) -> ResolvedLocation { ResolvedLocation(source: .coordinates, point: point) }
}

/// An independent reimplementation of the placement rules, for checking the engine against.
enum Reference {
    /// Haversine written out again (not ``GeoPoint/distanceKilometers(to:)``), same mean radius.
    static func kilometers(_ a: GeoPoint, _ b: GeoPoint) -> Double {
        let r = 6371.0088
        let toRadians = Double.pi / 180
        let (lat1, lat2) = (a.latitude * toRadians, b.latitude * toRadians)
        let dLat = lat2 - lat1
        let dLon = (b.longitude - a.longitude) * toRadians
        let h = pow(sin(dLat / 2), 2) + cos(lat1) * cos(lat2) * pow(sin(dLon / 2), 2)
        return 2 * r * atan2(h.squareRoot(), (1 - h).squareRoot())
    }

    static func rtt(_ participant: ResolvedLocation, _ node: SFUNode, _ policy: PlacementPolicy) -> Double {
        if let measured = participant.rtts[node.id] { return measured }
        return policy.baseRTT + policy.rttPerKilometer * kilometers(participant.point, node.location)
    }

    static func worstRTT(_ participants: [ResolvedLocation], _ node: SFUNode, _ policy: PlacementPolicy) -> Double {
        participants.isEmpty ? policy.baseRTT : participants.map { rtt($0, node, policy) }.max()!
    }

    static func rejection(_ node: SFUNode, incoming: Int, now: MonotonicTime, _ policy: PlacementPolicy) -> PlacementCandidate.Rejection? {
        if node.state == .down { return .down }
        if node.state == .draining { return .draining }
        guard let beat = node.lastHeartbeat, now.nanoseconds - beat.nanoseconds <= policy.staleAfter.nanoseconds else { return .stale }
        if node.reportedLoad + node.pending + incoming > node.capacity { return .full }
        return nil
    }

    /// The score, or `nil` when the node is not eligible.
    static func score(_ participants: [ResolvedLocation], _ node: SFUNode, now: MonotonicTime, _ policy: PlacementPolicy) -> Double? {
        let incoming = max(1, participants.count)
        guard rejection(node, incoming: incoming, now: now, policy) == nil else { return nil }
        let utilization = Double(node.reportedLoad + node.pending + incoming) / Double(max(1, node.capacity))
        return worstRTT(participants, node, policy) * (1 + policy.loadWeight * utilization * utilization) / max(node.weight, 0.001)
    }
}

extension PlacementDecision {
    func candidate(_ name: String) -> PlacementCandidate? { candidates.first { $0.sfu.rawValue == name } }
}
