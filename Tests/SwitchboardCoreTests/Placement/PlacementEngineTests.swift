import SwitchboardCore
import XCTest

final class PlacementEngineTests: XCTestCase {
    private typealias Rejection = PlacementCandidate.Rejection
    private let policy = PlacementPolicy()
    private let now = Fixture.now

    private func decide(_ participants: [ResolvedLocation], _ nodes: [SFUNode], policy: PlacementPolicy? = nil) -> PlacementDecision {
        PlacementEngine.decide(participants: participants, nodes: nodes, now: now, policy: policy ?? self.policy)
    }

    private func node(
        _ code: String, name: String? = nil, capacity: Int = 100, weight: Double = 1, state: SFUNode.State = .active,
        heartbeat: MonotonicTime?? = .some(Fixture.now), load: Int = 0, pending: Int = 0
    ) -> SFUNode {
        Fixture.node(
            name ?? "sfu-\(code)", at: code, capacity: capacity, weight: weight, state: state, heartbeat: heartbeat, load: load,
            pending: pending)
    }

    /// Checks the decision's shape: one candidate per node, eligible ones best first, then
    /// rejected ones by id; a score exactly when not rejected.
    private func assertWellFormed(_ decision: PlacementDecision, nodes: [SFUNode], _ message: String, file: StaticString = #filePath, line: UInt = #line) {
        XCTAssertEqual(Set(decision.candidates.map(\.sfu)), Set(nodes.map(\.id)), message, file: file, line: line)
        XCTAssertEqual(decision.candidates.count, nodes.count, message, file: file, line: line)
        let eligible = decision.candidates.prefix { $0.rejection == nil }
        let rejected = decision.candidates.dropFirst(eligible.count)
        XCTAssertTrue(rejected.allSatisfy { $0.rejection != nil && $0.score == nil }, message, file: file, line: line)
        XCTAssertTrue(eligible.allSatisfy { $0.score != nil }, message, file: file, line: line)
        let scores = eligible.compactMap(\.score)
        XCTAssertEqual(scores, scores.sorted(), "eligible candidates not best first: \(message)", file: file, line: line)
        XCTAssertEqual(rejected.map(\.sfu), rejected.map(\.sfu).sorted(), "rejected candidates not by id: \(message)", file: file, line: line)
        XCTAssertEqual(decision.chosen, eligible.first?.sfu, message, file: file, line: line)
    }

    // MARK: the region-aware table (after LiveKit's selector tests)

    private struct SelectorCase {
        let name: String
        let participants: [ResolvedLocation]
        let nodes: [SFUNode]
        let expected: String?
        /// Rejections expected by SFU id; every other SFU must be eligible.
        let rejections: [String: Rejection]
    }

    func test_theSelectorChoosesTheNearestEligibleSFUInEveryScenario() {
        let fresh = now
        let justStale = now.advanced(by: .milliseconds(-15_001))
        let exactlyStaleAfter = now.advanced(by: .seconds(-15))
        let atFra = [Fixture.at("fra")]
        let cases: [SelectorCase] = [
            SelectorCase(
                name: "a client is placed in its own region", participants: atFra,
                nodes: [node("fra"), node("lhr"), node("iad")], expected: "sfu-fra", rejections: [:]),
            SelectorCase(
                name: "with no SFU in its region a client goes to the nearest other region", participants: atFra,
                nodes: [node("lhr"), node("ams"), node("iad"), node("sin")], expected: "sfu-ams", rejections: [:]),
            SelectorCase(
                name: "a full SFU in the client's region sends it to the next nearest", participants: atFra,
                nodes: [node("fra", capacity: 10, load: 10), node("ams"), node("iad")], expected: "sfu-ams",
                rejections: ["sfu-fra": .full]),
            SelectorCase(
                name: "pending assignments count toward full", participants: atFra,
                nodes: [node("fra", capacity: 10, load: 5, pending: 5), node("ams")], expected: "sfu-ams",
                rejections: ["sfu-fra": .full]),
            SelectorCase(
                name: "an SFU with room for some but not all of the call is full for that call",
                participants: Array(repeating: Fixture.at("fra"), count: 3),
                nodes: [node("fra", capacity: 10, load: 8), node("ams")], expected: "sfu-ams", rejections: ["sfu-fra": .full]),
            SelectorCase(
                name: "an SFU with exactly enough room takes the call",
                participants: Array(repeating: Fixture.at("fra"), count: 3),
                nodes: [node("fra", capacity: 10, load: 6, pending: 1), node("ams")], expected: "sfu-fra", rejections: [:]),
            SelectorCase(
                name: "a call with no participants yet still needs one free slot", participants: [],
                nodes: [node("fra", capacity: 5, load: 5), node("iad", capacity: 5, load: 4)], expected: "sfu-iad",
                rejections: ["sfu-fra": .full]),
            SelectorCase(
                name: "an SFU with capacity zero is full", participants: atFra,
                nodes: [node("fra", capacity: 0), node("ams")], expected: "sfu-ams", rejections: ["sfu-fra": .full]),
            SelectorCase(
                name: "a stale SFU is skipped", participants: atFra,
                nodes: [node("fra", heartbeat: justStale), node("ams")], expected: "sfu-ams", rejections: ["sfu-fra": .stale]),
            SelectorCase(
                name: "a heartbeat exactly stale_after old is still fresh", participants: atFra,
                nodes: [node("fra", heartbeat: exactlyStaleAfter), node("ams")], expected: "sfu-fra", rejections: [:]),
            SelectorCase(
                name: "an SFU that never sent a heartbeat takes no call", participants: atFra,
                nodes: [node("fra", heartbeat: nil), node("ams", heartbeat: fresh)], expected: "sfu-ams",
                rejections: ["sfu-fra": .stale]),
            SelectorCase(
                name: "a draining SFU takes no new call", participants: atFra,
                nodes: [node("fra", state: .draining), node("ams")], expected: "sfu-ams", rejections: ["sfu-fra": .draining]),
            SelectorCase(
                name: "a down SFU takes no call even with a fresh heartbeat", participants: atFra,
                nodes: [node("fra", state: .down), node("ams")], expected: "sfu-ams", rejections: ["sfu-fra": .down]),
            SelectorCase(
                name: "a draining SFU that is also stale and full reports draining", participants: atFra,
                nodes: [node("fra", capacity: 1, state: .draining, heartbeat: nil, load: 1), node("ams")], expected: "sfu-ams",
                rejections: ["sfu-fra": .draining]),
            SelectorCase(
                name: "a stale SFU that is also full reports stale", participants: atFra,
                nodes: [node("fra", capacity: 1, heartbeat: justStale, load: 1), node("ams")], expected: "sfu-ams",
                rejections: ["sfu-fra": .stale]),
            SelectorCase(
                name: "when every SFU is rejected nothing is chosen and each says why", participants: atFra,
                nodes: [
                    node("fra", state: .down), node("lhr", state: .draining), node("ams", heartbeat: justStale),
                    node("iad", capacity: 3, load: 2, pending: 1), node("sin", heartbeat: nil),
                ],
                expected: nil,
                rejections: ["sfu-fra": .down, "sfu-lhr": .draining, "sfu-ams": .stale, "sfu-iad": .full, "sfu-sin": .stale]),
            SelectorCase(
                name: "an empty table chooses nothing", participants: atFra, nodes: [], expected: nil, rejections: [:]),
        ]
        for testCase in cases {
            let decision = decide(testCase.participants, testCase.nodes)
            XCTAssertEqual(decision.chosen?.rawValue, testCase.expected, testCase.name)
            for candidate in decision.candidates {
                XCTAssertEqual(candidate.rejection, testCase.rejections[candidate.sfu.rawValue], "\(testCase.name): \(candidate.sfu)")
            }
            assertWellFormed(decision, nodes: testCase.nodes, testCase.name)
        }
    }

    func test_eachCandidateExplainsItsDistanceRTTLoadAndScore() throws {
        let nodes = [node("ams", capacity: 40, load: 7, pending: 3), node("iad", state: .down)]
        let decision = decide([Fixture.at("fra"), Fixture.at("lhr")], nodes)
        let ams = try XCTUnwrap(decision.candidate("sfu-ams"))
        let worstKm = Fixture.region("ams").distanceKilometers(to: Fixture.region("lhr"))
        XCTAssertGreaterThan(worstKm, Fixture.region("ams").distanceKilometers(to: Fixture.region("fra")))
        XCTAssertEqual(ams.url, "wss://sfu-ams.example/sfu")
        XCTAssertEqual(ams.region, "ams")
        XCTAssertEqual(ams.worstDistanceKilometers, worstKm, accuracy: 1e-9)
        XCTAssertEqual(ams.worstRTT, 2 + 0.01 * worstKm, accuracy: 1e-9)
        XCTAssertEqual(ams.load, 10)
        XCTAssertEqual(ams.capacity, 40)
        XCTAssertEqual(ams.utilization, 12.0 / 40, accuracy: 1e-12)
        XCTAssertEqual(try XCTUnwrap(ams.score), ams.worstRTT * (1 + 0.3 * 0.3), accuracy: 1e-9)
        let iad = try XCTUnwrap(decision.candidate("sfu-iad"))
        XCTAssertEqual(iad.rejection, .down)
        XCTAssertNil(iad.score)
        XCTAssertGreaterThan(iad.worstDistanceKilometers, 5000, "rejected candidates still explain their distance")
    }

    // MARK: weight

    func test_aWeightOfTwoWinsOverAnEquallyNearSFUWhateverTheSeed() {
        let nodes = [node("fra", name: "plain", weight: 1), node("fra", name: "preferred", weight: 2)]
        for seed in UInt64(0)..<32 {
            let decision = decide([Fixture.at("fra")], nodes, policy: PlacementPolicy(seed: seed))
            XCTAssertEqual(decision.chosen?.rawValue, "preferred", "seed \(seed)")
        }
    }

    func test_aPreferredSFUBeatsANearerOneWhenItsWeightedScoreIsLower() {
        // From Frankfurt: Amsterdam ≈ 363 km (≈5.6 ms), Heathrow ≈ 659 km (≈8.6 ms, halved by weight 2).
        XCTAssertEqual(decide([Fixture.at("fra")], [node("ams"), node("lhr", weight: 2)]).chosen?.rawValue, "sfu-lhr")
        XCTAssertEqual(decide([Fixture.at("fra")], [node("ams"), node("lhr", weight: 1)]).chosen?.rawValue, "sfu-ams")
    }

    func test_weightCannotPullACallAcrossAnOcean() {
        XCTAssertEqual(decide([Fixture.at("fra")], [node("ams"), node("iad", weight: 2)]).chosen?.rawValue, "sfu-ams")
    }

    func test_aZeroWeightMakesAnSFUTheLastResortButNotIneligible() throws {
        let decision = decide([Fixture.at("fra")], [node("fra", weight: 0), node("syd")])
        XCTAssertEqual(decision.chosen?.rawValue, "sfu-syd")
        XCTAssertNotNil(try XCTUnwrap(decision.candidate("sfu-fra")).score)
        XCTAssertEqual(decide([Fixture.at("fra")], [node("fra", weight: 0)]).chosen?.rawValue, "sfu-fra")
    }

    // MARK: load

    func test_loadRaisesTheScoreByTheSquareOfUtilisation() throws {
        let nodes = [node("fra", name: "busy", load: 50), node("fra", name: "idle", load: 0)]
        let decision = decide([Fixture.at("fra")], nodes)
        XCTAssertEqual(decision.chosen?.rawValue, "idle")
        let busy = try XCTUnwrap(decision.candidate("busy")?.score)
        let idle = try XCTUnwrap(decision.candidate("idle")?.score)
        XCTAssertEqual(busy, 2 * (1 + 0.51 * 0.51), accuracy: 1e-12)
        XCTAssertEqual(idle, 2 * (1 + 0.01 * 0.01), accuracy: 1e-12)
    }

    func test_theScoreRisesStrictlyWithEveryParticipantOfLoad() throws {
        var previous = -Double.infinity
        for load in 0..<100 {
            let decision = decide([Fixture.at("lhr")], [node("fra", load: load)])
            let score = try XCTUnwrap(decision.candidates.first?.score, "load \(load)")
            XCTAssertGreaterThan(score, previous, "load \(load)")
            previous = score
        }
    }

    func test_aHeavilyLoadedNearSFULosesToAnIdleFartherOneWhenLoadWeighsEnough() {
        let nodes = [node("fra", load: 95), node("ams")]
        XCTAssertEqual(decide([Fixture.at("fra")], nodes, policy: PlacementPolicy(loadWeight: 3)).chosen?.rawValue, "sfu-ams")
        XCTAssertEqual(decide([Fixture.at("fra")], nodes, policy: PlacementPolicy(loadWeight: 1)).chosen?.rawValue, "sfu-fra")
    }

    func test_withLoadWeightZeroLoadDoesNotEnterTheScore() throws {
        let decision = decide([Fixture.at("fra")], [node("fra", load: 99), node("ams")], policy: PlacementPolicy(loadWeight: 0))
        XCTAssertEqual(decision.chosen?.rawValue, "sfu-fra")
        XCTAssertEqual(try XCTUnwrap(decision.candidate("sfu-fra")?.score), 2, accuracy: 1e-12)
    }

    func test_pendingAssignmentsCountAsLoad() {
        let nodes = [node("fra", name: "reported", load: 20), node("fra", name: "pending", load: 0, pending: 40)]
        XCTAssertEqual(decide([Fixture.at("fra")], nodes).chosen?.rawValue, "reported")
    }

    func test_aBurstOfCallsPlacedOneAfterAnotherNeverOverfillsAnSFU() {
        var nodes = [
            node("fra", capacity: 7), node("ams", capacity: 11), node("lhr", capacity: 13, load: 4), node("iad", capacity: 5),
            node("sin", capacity: 9, pending: 2),
        ]
        let regions = ["fra", "fra", "ams", "lhr", "iad", "sin", "nrt"]
        var random = SplitMix64(seed: 7)
        var placed = 0
        var refused = 0
        for call in 0..<80 {
            let size = 1 + Int(random.next() % 4)
            let participants = (0..<size).map { _ in Fixture.at(regions[Int(random.next() % UInt64(regions.count))]) }
            let decision = decide(participants, nodes)
            if let chosen = decision.chosen, let index = nodes.firstIndex(where: { $0.id == chosen }) {
                nodes[index].pending += size
                placed += size
            } else {
                refused += 1
                for node in nodes {
                    XCTAssertGreaterThan(node.effectiveLoad + size, node.capacity, "call \(call) refused though \(node.id) had room")
                }
            }
            for node in nodes {
                XCTAssertLessThanOrEqual(node.effectiveLoad, node.capacity, "call \(call): \(node.id) overfilled")
            }
        }
        XCTAssertGreaterThan(refused, 0, "the burst must outgrow the table")
        XCTAssertGreaterThanOrEqual(placed, 45 - 4 - 2 - 5 * 3, "free capacity left unused beyond fragmentation")
    }

    // MARK: measured RTT

    func test_measuredRTTsReplaceTheEstimateForListedSFUsOnly() throws {
        let nodes = [node("fra"), node("ams"), node("lhr")]
        let decision = decide([Fixture.at("fra", rtts: ["sfu-fra": 50, "sfu-ams": 40])], nodes)
        XCTAssertEqual(decision.chosen?.rawValue, "sfu-lhr")
        XCTAssertEqual(try XCTUnwrap(decision.candidate("sfu-fra")?.worstRTT), 50)
        XCTAssertEqual(try XCTUnwrap(decision.candidate("sfu-ams")?.worstRTT), 40)
        let lhrKm = Fixture.region("fra").distanceKilometers(to: Fixture.region("lhr"))
        XCTAssertEqual(try XCTUnwrap(decision.candidate("sfu-lhr")?.worstRTT), 2 + 0.01 * lhrKm, accuracy: 1e-9)
    }

    func test_aMeasuredRTTLowerThanAnyEstimateWinsOverDistance() {
        let nodes = [node("fra"), node("iad")]
        XCTAssertEqual(decide([Fixture.at("fra", rtts: ["sfu-iad": 1])], nodes).chosen?.rawValue, "sfu-iad")
        XCTAssertEqual(decide([Fixture.at("fra")], nodes).chosen?.rawValue, "sfu-fra")
    }

    func test_aMeasuredRTTToAnSFUOutsideTheTableChangesNothing() {
        let nodes = [node("fra"), node("ams")]
        XCTAssertEqual(
            decide([Fixture.at("fra", rtts: ["ghost": 0.5])], nodes), decide([Fixture.at("fra")], nodes))
    }

    func test_oneParticipantsBadMeasuredPathMovesTheWholeCall() {
        let nodes = [node("fra"), node("ams")]
        let participants = [Fixture.at("fra", rtts: ["sfu-fra": 300]), Fixture.at("ams")]
        XCTAssertEqual(decide(participants, nodes).chosen?.rawValue, "sfu-ams")
    }

    // MARK: minimax

    func test_aCallBetweenFrankfurtAndTokyoMeetsInMumbaiNotAtTheFirstJoiner() throws {
        let nodes = ["fra", "nrt", "dxb", "bom", "sin", "syd"].map { node($0) }
        let first = decide([Fixture.at("fra")], nodes)
        let both = decide([Fixture.at("fra"), Fixture.at("nrt")], nodes)
        XCTAssertEqual(first.chosen?.rawValue, "sfu-fra")
        XCTAssertEqual(both.chosen?.rawValue, "sfu-bom")
        let bom = try XCTUnwrap(both.candidate("sfu-bom"))
        let fra = try XCTUnwrap(both.candidate("sfu-fra"))
        XCTAssertLessThan(bom.worstDistanceKilometers, 7000)
        XCTAssertGreaterThan(fra.worstDistanceKilometers, 9000)
    }

    func test_theOrderOfParticipantsDoesNotMatter() {
        let nodes = ["fra", "nrt", "dxb", "bom", "sin", "sfo", "iad"].map { node($0) }
        let participants = [Fixture.at("fra"), Fixture.at("nrt"), Fixture.at("sfo"), Fixture.at("syd")]
        let forward = decide(participants, nodes)
        XCTAssertEqual(decide(participants.reversed(), nodes), forward)
        XCTAssertEqual(decide([participants[2], participants[0], participants[3], participants[1]], nodes), forward)
    }

    func test_aCallWithNoLocatedParticipantGoesToTheLeastLoadedSFU() {
        XCTAssertEqual(decide([], [node("fra", load: 50), node("syd", load: 10), node("iad", load: 30)]).chosen?.rawValue, "sfu-syd")
    }

    // MARK: determinism

    func test_theSameInputsGiveTheSameDecision() {
        let nodes = ["fra", "lhr", "ams", "iad", "nrt"].map { node($0, load: 3) }
        let participants = [Fixture.at("fra"), Fixture.at("iad", rtts: ["sfu-lhr": 70])]
        let first = decide(participants, nodes)
        for _ in 0..<5 { XCTAssertEqual(decide(participants, nodes), first) }
    }

    func test_theOrderOfTheTableDoesNotChangeTheDecision() {
        let nodes = (0..<8).map { node("fra", name: "tie-\($0)") } + [node("lhr"), node("iad", state: .down), node("sin", heartbeat: nil)]
        var random = SplitMix64(seed: 99)
        for seed in UInt64(0)..<8 {
            let policy = PlacementPolicy(seed: seed)
            let reference = decide([Fixture.at("fra")], nodes, policy: policy)
            for _ in 0..<10 {
                let shuffled = nodes.shuffled(using: &random)
                XCTAssertEqual(decide([Fixture.at("fra")], shuffled, policy: policy), reference, "seed \(seed)")
            }
        }
    }

    func test_tiesAreBrokenStablyForOneSeedAndDifferentlyAcrossSeeds() {
        let nodes = (0..<8).map { node("fra", name: "tie-\($0)") }
        var winners: Set<SFUID> = []
        var orders: Set<[SFUID]> = []
        for seed in UInt64(0)..<64 {
            let policy = PlacementPolicy(seed: seed)
            let decision = decide([Fixture.at("fra")], nodes, policy: policy)
            XCTAssertEqual(Set(decision.candidates.compactMap(\.score)).count, 1, "the fixture must tie")
            for _ in 0..<3 { XCTAssertEqual(decide([Fixture.at("fra")], nodes, policy: policy).chosen, decision.chosen, "seed \(seed)") }
            winners.insert(decision.chosen!)
            orders.insert(decision.candidates.map(\.sfu))
        }
        XCTAssertGreaterThanOrEqual(winners.count, 4, "64 seeds picked only \(winners)")
        XCTAssertGreaterThan(orders.count, 1, "the seed must change the whole tie order, not only the winner")
    }

    func test_twoSpecificSeedsBreakTheSameTieDifferently() {
        let nodes = [node("fra", name: "a"), node("fra", name: "b")]
        let chosen = (UInt64(0)..<16).map { decide([Fixture.at("fra")], nodes, policy: PlacementPolicy(seed: $0)).chosen!.rawValue }
        XCTAssertTrue(chosen.contains("a") && chosen.contains("b"), "\(chosen)")
    }
}
