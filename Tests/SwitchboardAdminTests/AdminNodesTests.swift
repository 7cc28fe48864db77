import Foundation
import SwitchboardAdmin
import SwitchboardCore
import SwitchboardTesting
import XCTest

/// `GET /v1/nodes` and the roles it shows: judged from the node rows and the leader lease at
/// the database's instant.
final class AdminNodesTests: XCTestCase {
    private let now = Date(timeIntervalSince1970: 1_800_000_000)

    private func row(_ id: String, leaseLeft seconds: TimeInterval, sockets: Int = 0, calls: Int = 0) -> NodeRecord {
        NodeRecord(
            id: id, description: "host-\(id) pid 1", startedAt: now.addingTimeInterval(-600), lastSeen: now.addingTimeInterval(seconds - 10),
            leaseUntil: now.addingTimeInterval(seconds), sockets: sockets, calls: calls)
    }

    func test_eachNodesSocketsAndCallsAndTheLiveNodesTotals() throws {
        let view = ClusterView(
            store: "postgres",
            rows: [row("a", leaseLeft: 5, sockets: 12, calls: 4), row("b", leaseLeft: 5, sockets: 30, calls: 9), row("c", leaseLeft: -1, sockets: 7, calls: 2)],
            leader: Leadership(node: "a", generation: 1, leaseUntil: now.addingTimeInterval(3)), current: "a", now: now)
        XCTAssertEqual(view.nodes.map(\.sockets), [12, 30, 7])
        XCTAssertEqual(view.sockets, 42, "a dead node's last count is not counted")
        let encoder = JSONEncoder()
        encoder.keyEncodingStrategy = .convertToSnakeCase
        let body = try XCTUnwrap(try JSONSerialization.jsonObject(with: encoder.encode(view)) as? [String: Any])
        XCTAssertEqual(body["sockets"] as? Int, 42)
        XCTAssertEqual((body["nodes"] as? [[String: Any]])?.map { $0["sockets"] as? Int }, [12, 30, 7])
        XCTAssertEqual(view.calls, 13, "a dead node's calls are not counted")
        XCTAssertEqual(body["calls"] as? Int, 13)
        XCTAssertEqual((body["nodes"] as? [[String: Any]])?.map { $0["calls"] as? Int }, [4, 9, 2])
    }

    func test_theLeaderHoldsARunningLeaseLapsedNodesAreDeadTheRestStandBy() {
        let view = ClusterView(
            store: "postgres", rows: [row("c", leaseLeft: 5), row("a", leaseLeft: -1), row("b", leaseLeft: 8), row("d", leaseLeft: 0)],
            leader: Leadership(node: "b", generation: 4, leaseUntil: now.addingTimeInterval(3)), current: "c", now: now)
        XCTAssertEqual(view.leader, "b")
        XCTAssertEqual(view.generation, 4)
        XCTAssertEqual(view.nodes.map(\.id), ["b", "c", "a", "d"], "leader, standbys, dead; by id within each")
        XCTAssertEqual(view.nodes.map(\.role), [.leader, .standby, .dead, .dead], "a lease ending now has lapsed")
        XCTAssertEqual(view.nodes.filter(\.current).map(\.id), ["c"])
    }

    func test_aLapsedLeaderLeaseMeansNoLeaderUntilATakeover() {
        let view = ClusterView(
            store: "postgres", rows: [row("a", leaseLeft: 5), row("b", leaseLeft: 5)], leader: Leadership(node: "a", generation: 7, leaseUntil: now.addingTimeInterval(-0.5)), current: "b",
            now: now)
        XCTAssertNil(view.leader)
        XCTAssertEqual(view.generation, 7, "the last generation stays known")
        XCTAssertEqual(view.nodes.map(\.role), [.standby, .standby])
    }

    func test_theRouteAnswersTheViewWithNullsWrittenOutAndUnavailableAsA503() throws {
        let context = InMemoryAdminContext()
        let router = AdminRoutes.router(configuration: AdminConfiguration(auth: .none, token: nil), context: context)
        context.clusterView = ClusterView(store: "postgres", rows: [row("a", leaseLeft: 5)], leader: nil, current: "a", now: now)
        let request = HTTPRequest(
            method: "GET", path: "/v1/nodes", query: [:], headers: adminTestHeaders([:], body: ""), body: [], remoteAddress: "127.0.0.1", listener: .admin)
        let response = router.respond(to: request)
        XCTAssertEqual(response.status, 200)
        let body = try XCTUnwrap(try JSONSerialization.jsonObject(with: Data(response.body)) as? [String: Any])
        XCTAssertTrue(body["leader"] is NSNull && body["generation"] is NSNull, "\(body)")
        let nodes = try XCTUnwrap(body["nodes"] as? [[String: Any]])
        XCTAssertEqual(nodes.map { $0["role"] as? String }, ["standby"])
        XCTAssertEqual(nodes.first?["lease_until"] as? String, "2027-01-15T08:00:05Z")
        XCTAssertEqual(nodes.first?["current"] as? Bool, true)

        context.clusterFailure = SwitchboardError(.unavailable, "PostgreSQL: connection refused")
        let refused = router.respond(to: request)
        XCTAssertEqual(refused.status, 503)
        XCTAssertTrue(String(decoding: refused.body, as: UTF8.self).contains(#""code":"unavailable""#))
    }
}
