import Foundation
import SwitchboardCore

extension SplitMix64 {
    /// Uniform in `range`.
    mutating func int(_ range: ClosedRange<Int>) -> Int { range.lowerBound + Int(next() % UInt64(range.count)) }
}

/// A metropolitan area clients are sampled around: centre and population (millions, rounded).
struct Metro {
    let name: String
    let latitude: Double
    let longitude: Double
    let population: Double
}

/// 44 large metros (UN World Urbanization Prospects order of magnitude; enough for weighting).
let metros: [Metro] = [
    Metro(name: "Tokyo", latitude: 35.68, longitude: 139.69, population: 37),
    Metro(name: "Delhi", latitude: 28.61, longitude: 77.21, population: 31),
    Metro(name: "Shanghai", latitude: 31.23, longitude: 121.47, population: 27),
    Metro(name: "São Paulo", latitude: -23.55, longitude: -46.63, population: 22),
    Metro(name: "Mexico City", latitude: 19.43, longitude: -99.13, population: 22),
    Metro(name: "Dhaka", latitude: 23.81, longitude: 90.41, population: 21),
    Metro(name: "Cairo", latitude: 30.04, longitude: 31.24, population: 21),
    Metro(name: "Beijing", latitude: 39.90, longitude: 116.41, population: 20),
    Metro(name: "Mumbai", latitude: 19.08, longitude: 72.88, population: 20),
    Metro(name: "Osaka", latitude: 34.69, longitude: 135.50, population: 19),
    Metro(name: "New York", latitude: 40.71, longitude: -74.01, population: 19),
    Metro(name: "Karachi", latitude: 24.86, longitude: 67.01, population: 16),
    Metro(name: "Buenos Aires", latitude: -34.60, longitude: -58.38, population: 15),
    Metro(name: "Istanbul", latitude: 41.01, longitude: 28.98, population: 15),
    Metro(name: "Kolkata", latitude: 22.57, longitude: 88.36, population: 15),
    Metro(name: "Kinshasa", latitude: -4.44, longitude: 15.27, population: 14),
    Metro(name: "Lagos", latitude: 6.52, longitude: 3.38, population: 14),
    Metro(name: "Manila", latitude: 14.60, longitude: 120.98, population: 14),
    Metro(name: "Rio de Janeiro", latitude: -22.91, longitude: -43.17, population: 13),
    Metro(name: "Guangzhou", latitude: 23.13, longitude: 113.26, population: 13),
    Metro(name: "Lahore", latitude: 31.55, longitude: 74.34, population: 13),
    Metro(name: "Los Angeles", latitude: 34.05, longitude: -118.24, population: 12),
    Metro(name: "Moscow", latitude: 55.76, longitude: 37.62, population: 12),
    Metro(name: "Bangalore", latitude: 12.97, longitude: 77.59, population: 12),
    Metro(name: "Paris", latitude: 48.86, longitude: 2.35, population: 11),
    Metro(name: "Bogotá", latitude: 4.71, longitude: -74.07, population: 11),
    Metro(name: "Jakarta", latitude: -6.21, longitude: 106.85, population: 11),
    Metro(name: "Lima", latitude: -12.05, longitude: -77.04, population: 11),
    Metro(name: "Bangkok", latitude: 13.76, longitude: 100.50, population: 10),
    Metro(name: "Seoul", latitude: 37.57, longitude: 126.98, population: 10),
    Metro(name: "London", latitude: 51.51, longitude: -0.13, population: 9),
    Metro(name: "Tehran", latitude: 35.69, longitude: 51.39, population: 9),
    Metro(name: "Chicago", latitude: 41.88, longitude: -87.63, population: 9),
    Metro(name: "Riyadh", latitude: 24.71, longitude: 46.68, population: 7),
    Metro(name: "Santiago", latitude: -33.45, longitude: -70.67, population: 7),
    Metro(name: "Madrid", latitude: 40.42, longitude: -3.70, population: 7),
    Metro(name: "San Francisco", latitude: 37.77, longitude: -122.42, population: 7),
    Metro(name: "Toronto", latitude: 43.65, longitude: -79.38, population: 6),
    Metro(name: "Johannesburg", latitude: -26.20, longitude: 28.05, population: 6),
    Metro(name: "Singapore", latitude: 1.35, longitude: 103.82, population: 6),
    Metro(name: "Sydney", latitude: -33.87, longitude: 151.21, population: 5),
    Metro(name: "Nairobi", latitude: -1.29, longitude: 36.82, population: 5),
    Metro(name: "Berlin", latitude: 52.52, longitude: 13.40, population: 4),
    Metro(name: "Dubai", latitude: 25.20, longitude: 55.27, population: 4),
]

/// Where SFUs run: 24 cloud-region sites (city coordinates).
struct Site {
    let code: String
    let latitude: Double
    let longitude: Double
}

let sites: [Site] = [
    Site(code: "iad", latitude: 39.04, longitude: -77.49),  // Ashburn
    Site(code: "cmh", latitude: 39.96, longitude: -83.00),  // Columbus
    Site(code: "dfw", latitude: 32.78, longitude: -96.80),  // Dallas
    Site(code: "sfo", latitude: 37.77, longitude: -122.42),  // San Francisco
    Site(code: "pdx", latitude: 45.84, longitude: -119.70),  // Oregon
    Site(code: "yul", latitude: 45.50, longitude: -73.57),  // Montréal
    Site(code: "qro", latitude: 20.59, longitude: -100.39),  // Querétaro
    Site(code: "gru", latitude: -23.55, longitude: -46.63),  // São Paulo
    Site(code: "fra", latitude: 50.11, longitude: 8.68),  // Frankfurt
    Site(code: "dub", latitude: 53.35, longitude: -6.26),  // Dublin
    Site(code: "lhr", latitude: 51.51, longitude: -0.13),  // London
    Site(code: "cdg", latitude: 48.86, longitude: 2.35),  // Paris
    Site(code: "arn", latitude: 59.33, longitude: 18.07),  // Stockholm
    Site(code: "mxp", latitude: 45.46, longitude: 9.19),  // Milan
    Site(code: "tlv", latitude: 32.09, longitude: 34.78),  // Tel Aviv
    Site(code: "bah", latitude: 26.07, longitude: 50.56),  // Bahrain
    Site(code: "cpt", latitude: -33.92, longitude: 18.42),  // Cape Town
    Site(code: "bom", latitude: 19.08, longitude: 72.88),  // Mumbai
    Site(code: "sin", latitude: 1.35, longitude: 103.82),  // Singapore
    Site(code: "cgk", latitude: -6.21, longitude: 106.85),  // Jakarta
    Site(code: "hkg", latitude: 22.32, longitude: 114.17),  // Hong Kong
    Site(code: "icn", latitude: 37.57, longitude: 126.98),  // Seoul
    Site(code: "nrt", latitude: 35.68, longitude: 139.69),  // Tokyo
    Site(code: "syd", latitude: -33.87, longitude: 151.21),  // Sydney
]

/// Draws client locations: a metro by population, then a point around its centre
/// (distance exponential with mean 120 km, capped at 1,500 km; bearing uniform).
struct ClientSampler {
    private let cumulative: [Double]

    init() {
        var total = 0.0
        cumulative = metros.map { total += $0.population; return total }
    }

    func metro(_ random: inout SplitMix64) -> Int {
        let target = random.unit() * cumulative.last!
        return cumulative.firstIndex { $0 > target } ?? metros.count - 1
    }

    func point(near index: Int, _ random: inout SplitMix64) -> GeoPoint {
        let metro = metros[index]
        let distance = min(1500, -log(1 - random.unit()) * 120)
        return destination(latitude: metro.latitude, longitude: metro.longitude, kilometers: distance, bearing: random.unit() * 2 * .pi)
    }

    func point(_ random: inout SplitMix64) -> GeoPoint { point(near: metro(&random), &random) }
}

/// The point `kilometers` from a start along an initial bearing (radians), on the sphere.
func destination(latitude: Double, longitude: Double, kilometers: Double, bearing: Double) -> GeoPoint {
    let radians = Double.pi / 180
    let angular = kilometers / GeoPoint.earthRadiusKilometers
    let phi1 = latitude * radians
    let lambda1 = longitude * radians
    let phi2 = asin(sin(phi1) * cos(angular) + cos(phi1) * sin(angular) * cos(bearing))
    let lambda2 = lambda1 + atan2(sin(bearing) * sin(angular) * cos(phi1), cos(angular) - sin(phi1) * sin(phi2))
    var lon = lambda2 / radians
    lon = (lon + 540).truncatingRemainder(dividingBy: 360) - 180
    let lat = max(-90, min(90, phi2 / radians))
    return GeoPoint(latitude: lat, longitude: max(-180, min(180, lon)))!
}

/// The SFU table of the benchmark: one or two SFUs per site, capacities 200–1,000
/// participants, weight 1; three of them unhealthy (one down, one draining, one stale).
struct SFUWorld {
    var nodes: [SFUNode]
    let now: MonotonicTime
    let policy: PlacementPolicy

    static let staleAfter = Duration.seconds(15)

    init(_ random: inout SplitMix64) {
        now = MonotonicTime(nanoseconds: 3_600 * 1_000_000_000)
        policy = PlacementPolicy(staleAfter: Self.staleAfter, seed: random.next())
        var nodes: [SFUNode] = []
        for site in sites {
            for index in 1...random.int(1...2) {
                let location = GeoPoint(latitude: site.latitude, longitude: site.longitude)!
                nodes.append(
                    SFUNode(
                        id: SFUID("\(site.code)-\(index)")!, url: "wss://\(site.code)-\(index).sfu.example", region: site.code,
                        location: location, capacity: [200, 500, 1000][random.int(0...2)], weight: 1, state: .active,
                        lastHeartbeat: now.advanced(by: .seconds(-random.int(0...10)))))
            }
        }
        var unhealthy = Set<Int>()
        while unhealthy.count < 3 { unhealthy.insert(random.int(0...(nodes.count - 1))) }
        for (order, index) in unhealthy.sorted().enumerated() {
            switch order {
            case 0: nodes[index].state = .down
            case 1: nodes[index].state = .draining
            default: nodes[index].lastHeartbeat = now.advanced(by: .seconds(-60))
            }
        }
        self.nodes = nodes
    }

    /// Active, heartbeat fresh, room for `incoming` more participants.
    func healthy(_ node: SFUNode, incoming: Int = 1) -> Bool {
        guard node.state == .active, let beat = node.lastHeartbeat, now.since(beat) <= policy.staleAfter else { return false }
        return node.effectiveLoad + incoming <= node.capacity
    }

    func decide(_ participants: [ResolvedLocation]) -> PlacementDecision {
        PlacementEngine.decide(participants: participants, nodes: nodes, now: now, policy: policy)
    }

    func node(_ id: SFUID) -> SFUNode { nodes.first { $0.id == id }! }
}

/// A participant whose coordinates are known.
func located(_ point: GeoPoint) -> ResolvedLocation { ResolvedLocation(source: .coordinates, point: point) }
