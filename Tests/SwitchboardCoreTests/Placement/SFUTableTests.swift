import Foundation
import SwitchboardCore
import XCTest

/// Placement as a batch sees it: a pure decision over a snapshot, whose result is a mutation
/// of the batch's own transaction and nothing else.
final class SFUTableTests: XCTestCase {
    private let cid = CallCID(cid: "default:standup")!
    private let wall = Date(timeIntervalSince1970: 1_800_000_000)

    private func table(_ nodes: [SFUNode]) -> SFUTable {
        SFUTable(
            nodes: Dictionary(uniqueKeysWithValues: nodes.map { ($0.id, $0) }), hasSFUs: true, policy: PlacementPolicy(),
            resolver: LocationResolver(regions: Fixture.regions, fallback: Fixture.region("fra")), now: Fixture.now)
    }

    func test_aNewPlacementIsAMutationOfTheBatchAndNothingElse() throws {
        let sfus = table([Fixture.node("sfu-fra", at: "fra"), Fixture.node("sfu-sin", at: "sin")])
        var out = CallOutput()
        let sfu = try sfus.place(cid, participants: [LocationHint(region: "ams")], current: nil, now: wall, out: &out)

        XCTAssertEqual(sfu, SFUAssignment(id: "sfu-fra", url: "wss://sfu-fra.example/sfu", region: "fra"))
        let record = PlacementRecord(
            callID: "default:standup", sfu: Fixture.id("sfu-fra"), locations: [LocationHint(region: "ams")], sources: [.region], assignedAt: wall,
            reason: "placed")
        XCTAssertEqual(out.mutations, [.savePlacement(record)])
        XCTAssertEqual(out.placed, [record])
        XCTAssertEqual(sfus.nodes[Fixture.id("sfu-fra")]?.pending, 0, "the snapshot itself is unchanged")
    }

    func test_aCallKeepsItsSFUWithoutAMutationWhileThatSFUIsUp() throws {
        let sfus = table([Fixture.node("sfu-fra", at: "fra"), Fixture.node("sfu-sin", at: "sin", state: .draining)])
        var out = CallOutput()
        let current = SFUAssignment(id: "sfu-sin", url: "wss://sfu-sin.example/sfu", region: "sin")
        XCTAssertEqual(try sfus.place(cid, participants: [LocationHint(region: "fra")], current: current, now: wall, out: &out), current)
        XCTAssertTrue(out.isEmpty, "a draining SFU keeps its calls")
    }

    func test_aCallOnADownSFUIsMovedAndSaysSo() throws {
        let sfus = table([Fixture.node("sfu-fra", at: "fra"), Fixture.node("sfu-sin", at: "sin", state: .down)])
        var out = CallOutput()
        let current = SFUAssignment(id: "sfu-sin", url: "wss://sfu-sin.example/sfu", region: "sin")
        XCTAssertEqual(try sfus.place(cid, participants: [LocationHint(region: "sin")], current: current, now: wall, out: &out)?.id, "sfu-fra")
        XCTAssertEqual(out.placed.map(\.reason), ["moved"])
        XCTAssertEqual(out.mutations.count, 1)
    }

    func test_placementsEarlierInTheSameBatchCountAsLoad() throws {
        let sfus = table([Fixture.node("sfu-fra", at: "fra", capacity: 3), Fixture.node("sfu-lhr", at: "lhr", capacity: 3)])
        var out = CallOutput()
        let two = [LocationHint(region: "fra"), LocationHint(region: "fra")]
        let first = try sfus.place(CallCID(cid: "default:a")!, participants: two, current: nil, now: wall, out: &out)
        let second = try sfus.place(CallCID(cid: "default:b")!, participants: two, current: nil, now: wall, out: &out)
        XCTAssertEqual(first?.id, "sfu-fra")
        XCTAssertEqual(second?.id, "sfu-lhr", "Frankfurt holds 2 of 3 already in this batch")
        XCTAssertThrowsError(try sfus.place(CallCID(cid: "default:c")!, participants: two, current: nil, now: wall, out: &out)) { error in
            XCTAssertEqual((error as? SwitchboardError)?.code, .noSFUAvailable)
        }
        XCTAssertEqual(out.placementRefusals, [.full])
        XCTAssertEqual(out.placed.map(\.callID), ["default:a", "default:b"], "a refusal adds no placement")
    }

    func test_noSFUDefinedMeansPeerToPeerAndNoMutation() throws {
        var out = CallOutput()
        XCTAssertNil(try SFUTable.none.place(cid, participants: [LocationHint()], current: nil, now: wall, out: &out))
        XCTAssertTrue(out.isEmpty)
    }

    func test_stalePlacementsAreRefusedByTheirCommonReason() {
        let stale = Fixture.time(1)
        let sfus = table([Fixture.node("sfu-fra", at: "fra", heartbeat: .some(stale)), Fixture.node("sfu-lhr", at: "lhr", heartbeat: .some(stale))])
        var out = CallOutput()
        XCTAssertThrowsError(try sfus.place(cid, participants: [LocationHint(region: "fra")], current: nil, now: wall, out: &out))
        XCTAssertEqual(out.placementRefusals, [.stale])
        XCTAssertTrue(out.mutations.isEmpty)
    }
}
