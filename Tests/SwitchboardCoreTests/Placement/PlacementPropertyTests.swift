import Foundation
import SwitchboardCore
import XCTest

/// Properties of the placement engine on random worlds, each reproducible from its seed.
final class PlacementPropertyTests: XCTestCase {
    private struct World {
        var nodes: [SFUNode]
        var participants: [ResolvedLocation]
        var policy: PlacementPolicy
        var now: MonotonicTime
    }

    private struct Shape {
        /// Every SFU active, fresh, weight 1, with the same load and capacity.
        var uniform = false
        var participants: ClosedRange<Int> = 1...6
    }

    private static let worlds = 400

    private func randomPoint(_ random: inout SplitMix64) -> GeoPoint {
        // Uniform on the sphere.
        let latitude = asin(2 * random.unit() - 1) * 180 / .pi
        return GeoPoint(latitude: max(-90, min(90, latitude)), longitude: random.unit() * 360 - 180)!
    }

    private func int(_ range: ClosedRange<Int>, _ random: inout SplitMix64) -> Int {
        range.lowerBound + Int(random.next() % UInt64(range.count))
    }

    private func randomWorld(_ random: inout SplitMix64, shape: Shape = Shape()) -> World {
        let now = Fixture.now
        let staleAfter = Duration.seconds(15)
        let count = int(20...200, &random)
        let sharedLoad = int(0...60, &random)
        var nodes: [SFUNode] = []
        for index in 0..<count {
            // A third of the SFUs share a site with an earlier one, so exact ties happen.
            let location = index > 0 && random.chance(1.0 / 3) ? nodes[int(0...(index - 1), &random)].location : randomPoint(&random)
            var node = SFUNode(id: SFUID("sfu-\(index)")!, url: "wss://sfu-\(index).example", location: location, capacity: 100)
            if shape.uniform {
                node.lastHeartbeat = now.advanced(by: .milliseconds(-int(0...15_000, &random)))
                node.reportedLoad = sharedLoad
            } else {
                node.capacity = random.chance(0.05) ? 0 : int(1...100, &random)
                node.reportedLoad = int(0...(node.capacity + 3), &random)
                node.pending = random.chance(0.3) ? int(0...5, &random) : 0
                node.weight = [0, 0.5, 1, 1, 1, 1.5, 2][int(0...6, &random)]
                let state = random.unit()
                node.state = state < 0.8 ? .active : state < 0.9 ? .draining : .down
                node.lastHeartbeat = random.chance(0.1) ? nil : now.advanced(by: .milliseconds(-int(0...20_000, &random)))
            }
            nodes.append(node)
        }
        let participants = (0..<int(shape.participants, &random)).map { _ -> ResolvedLocation in
            let point = randomPoint(&random)
            guard random.chance(0.3) else { return ResolvedLocation(source: .coordinates, point: point) }
            var rtts: [SFUID: Double] = [:]
            for _ in 0..<int(1...10, &random) { rtts[nodes[int(0...(count - 1), &random)].id] = 0.1 + random.unit() * 300 }
            return ResolvedLocation(source: .rtt, point: point, rtts: rtts)
        }
        let policy = PlacementPolicy(
            baseRTT: random.unit() * 10, rttPerKilometer: [0.005, 0.01, 0.02][int(0...2, &random)],
            loadWeight: shape.uniform ? 1 : random.unit() * 3, staleAfter: staleAfter, seed: random.next())
        return World(nodes: nodes, participants: participants, policy: policy, now: now)
    }

    private func decide(_ world: World, participants: [ResolvedLocation]? = nil) -> PlacementDecision {
        PlacementEngine.decide(participants: participants ?? world.participants, nodes: world.nodes, now: world.now, policy: world.policy)
    }

    /// (a) The chosen SFU is a brute-force optimum of the score, computed independently.
    func test_theChosenSFUIsTheBruteForceOptimumOnRandomWorlds() {
        var random = SplitMix64(seed: 0x5EED_0001)
        var chosenCount = 0
        var noneCount = 0
        for world in 0..<Self.worlds {
            let w = randomWorld(&random)
            let decision = decide(w)
            let incoming = max(1, w.participants.count)
            var best: (id: SFUID, score: Double)?
            var scores: [SFUID: Double] = [:]
            for node in w.nodes {
                let candidate = decision.candidate(node.id.rawValue)
                XCTAssertEqual(
                    candidate?.rejection, Reference.rejection(node, incoming: incoming, now: w.now, w.policy), "world \(world) \(node.id)")
                guard let score = Reference.score(w.participants, node, now: w.now, w.policy) else { continue }
                scores[node.id] = score
                XCTAssertEqual(candidate?.score ?? -1, score, accuracy: score * 1e-9, "world \(world) \(node.id)")
                if best == nil || score < best!.score { best = (node.id, score) }
            }
            guard let best else {
                XCTAssertNil(decision.chosen, "world \(world): chose though nothing is eligible")
                noneCount += 1
                continue
            }
            chosenCount += 1
            guard let chosen = decision.chosen, let chosenScore = scores[chosen] else {
                XCTFail("world \(world): chose \(String(describing: decision.chosen)), expected \(best.id)")
                continue
            }
            XCTAssertLessThanOrEqual(chosenScore, best.score * (1 + 1e-9), "world \(world): chose \(chosen), best \(best.id)")
        }
        XCTAssertGreaterThan(chosenCount, Self.worlds / 2, "most random worlds should have an eligible SFU")
    }

    /// (b) With equal loads and every SFU eligible, minimax is never worse than placing at the
    /// first joiner's best SFU, for the worst participant's estimated RTT; and often better.
    func test_minimaxIsNeverWorseThanFirstJoinerPlacementForTheWorstParticipant() throws {
        var random = SplitMix64(seed: 0x5EED_0002)
        var strictlyBetter = 0
        var improvement = 0.0
        for world in 0..<Self.worlds {
            let w = randomWorld(&random, shape: Shape(uniform: true, participants: 2...6))
            let minimax = decide(w)
            let firstJoiner = decide(w, participants: [w.participants[0]])
            let minimaxNode = try XCTUnwrap(w.nodes.first { $0.id == minimax.chosen }, "world \(world)")
            let firstNode = try XCTUnwrap(w.nodes.first { $0.id == firstJoiner.chosen }, "world \(world)")
            let minimaxWorst = Reference.worstRTT(w.participants, minimaxNode, w.policy)
            let firstWorst = Reference.worstRTT(w.participants, firstNode, w.policy)
            XCTAssertLessThanOrEqual(minimaxWorst, firstWorst * (1 + 1e-9), "world \(world)")
            if minimaxWorst < firstWorst * (1 - 1e-9) { strictlyBetter += 1 }
            improvement += minimaxWorst / firstWorst
        }
        XCTAssertGreaterThan(strictlyBetter, Self.worlds / 4, "minimax should usually beat the first joiner on random worlds")
        XCTAssertLessThan(improvement / Double(Self.worlds), 0.95)
    }

    /// The decision depends on the table's contents, not on its row order.
    func test_shufflingTheTableNeverChangesTheDecisionOnRandomWorlds() {
        var random = SplitMix64(seed: 0x5EED_0003)
        for world in 0..<Self.worlds / 4 {
            var w = randomWorld(&random)
            let before = decide(w)
            w.nodes.shuffle(using: &random)
            XCTAssertEqual(decide(w), before, "world \(world)")
        }
    }

    /// A burst of calls placed one after another, each counted as pending on its SFU at once,
    /// never takes an SFU past its capacity, and no call is refused while some SFU had room.
    func test_aBurstOnRandomWorldsNeverOverfillsAndNeverRefusesWhileThereIsRoom() {
        var random = SplitMix64(seed: 0x5EED_0004)
        for world in 0..<20 {
            var w = randomWorld(&random)
            // Small SFUs, so a burst outgrows the table in a few hundred calls.
            for index in w.nodes.indices {
                w.nodes[index].capacity /= 8
                w.nodes[index].reportedLoad /= 8
            }
            let eligibleCapacity = w.nodes.reduce(0) { $0 + max(0, $1.capacity - $1.effectiveLoad) }
            var refusals = 0
            for call in 0..<(eligibleCapacity / 2 + 20) {
                let participants = (0..<int(1...6, &random)).map { _ in Fixture.at(randomPoint(&random)) }
                let decision = decide(w, participants: participants)
                if let chosen = decision.chosen {
                    let index = w.nodes.firstIndex { $0.id == chosen }!
                    XCTAssertNil(Reference.rejection(w.nodes[index], incoming: participants.count, now: w.now, w.policy), "world \(world) call \(call)")
                    w.nodes[index].pending += participants.count
                    XCTAssertLessThanOrEqual(w.nodes[index].effectiveLoad, w.nodes[index].capacity, "world \(world) call \(call)")
                } else {
                    refusals += 1
                    let open = w.nodes.filter { Reference.rejection($0, incoming: participants.count, now: w.now, w.policy) == nil }
                    XCTAssertEqual(open.map(\.id), [], "world \(world) call \(call) refused")
                }
            }
            XCTAssertGreaterThan(refusals, 0, "world \(world): the burst must outgrow the table")
        }
    }

    /// The one-pass `choose` that placing uses agrees with `decide` on every random world.
    func test_theFastChoiceEqualsTheExplainedDecisionOnRandomWorlds() {
        var random = SplitMix64(seed: 0x5EED_00FA)
        for world in 0..<Self.worlds {
            let w = randomWorld(&random)
            XCTAssertEqual(
                PlacementEngine.choose(participants: w.participants, nodes: w.nodes, now: w.now, policy: w.policy), decide(w).chosen,
                "world \(world)")
        }
    }
}
