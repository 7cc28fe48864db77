import Foundation
import SwitchboardCore

/// Settings of SFU placement (config section `placement`), with its data files loaded.
public struct PlacementConfiguration: Sendable {
    public var policy: PlacementPolicy
    public var regions: RegionTable
    public var prefixes: IPPrefixTable
    /// The point of `placement.default_region`.
    public var fallback: GeoPoint
    /// The SFU seed file, if configured.
    public var seedFile: String?
    /// How often pulled SFUs are polled, and how long one poll may take.
    public var pollInterval: Duration
    public var pollTimeout: Duration
    /// Whether the configured poll interval or timeout was above a quarter of `stale_after_ms`
    /// and was capped there.
    public var pollCapped: Bool

    /// The resolver these settings describe.
    public var resolver: LocationResolver {
        LocationResolver(regions: regions.points, prefixes: prefixes, fallback: fallback)
    }

    /// Reads `placement.*`; data files are loaded here so a bad one fails at start, naming its key.
    init(reading values: ConfigValues) throws {
        let regionsFile = try values.string("placement.regions_file")
        regions = regionsFile.isEmpty ? .builtin : try RegionTable(csv: Self.read(regionsFile, key: "placement.regions_file"))
        let prefixFile = try values.string("placement.ip_prefix_file")
        prefixes = prefixFile.isEmpty ? IPPrefixTable() : try IPPrefixTable(csv: Self.read(prefixFile, key: "placement.ip_prefix_file"))
        let region = try values.string("placement.default_region")
        guard let point = regions.point(of: region) else {
            throw SwitchboardError(.invalidConfiguration, "placement.default_region: \(region) is not in the region table")
        }
        fallback = point
        let seed = try values.string("placement.sfu_seed_file")
        seedFile = seed.isEmpty ? nil : seed
        pollInterval = .milliseconds(try values.int("placement.poll_interval_ms"))
        pollTimeout = .milliseconds(try values.int("placement.poll_timeout_ms"))
        // A polled SFU must get an answered poll in well within stale_after, or a healthy one
        // goes down: both are capped at a quarter of it (the daemon logs when it caps).
        let quarter = try values.milliseconds("placement.stale_after_ms") / 4
        pollCapped = pollInterval > quarter || pollTimeout > quarter
        pollInterval = min(pollInterval, quarter)
        pollTimeout = min(pollTimeout, quarter)
        policy = PlacementPolicy(
            baseRTT: try values.double("placement.base_rtt_ms"), rttPerKilometer: try values.double("placement.rtt_per_km"),
            loadWeight: try values.double("placement.load_weight"), staleAfter: try values.milliseconds("placement.stale_after_ms"),
            seed: UInt64(try values.int("placement.tie_seed")))
    }

    static func read(_ path: String, key: String) throws -> String {
        do {
            return try String(contentsOfFile: path, encoding: .utf8)
        } catch {
            throw SwitchboardError(.invalidConfiguration, "\(key): cannot read \(path)")
        }
    }

    /// The SFU definitions in the seed file (`{"sfus":[...]}`), or none.
    public func loadSeed() throws -> [SFUDefinition] {
        guard let seedFile else { return [] }
        struct Seed: Decodable { let sfus: [SFUDefinition] }
        do {
            return try JSONDecoder().decode(Seed.self, from: Data(Self.read(seedFile, key: "placement.sfu_seed_file").utf8)).sfus
        } catch let error as SwitchboardError {
            throw error
        } catch {
            throw SwitchboardError(.invalidConfiguration, "placement.sfu_seed_file: \(seedFile) is not {\"sfus\":[...]}: \(error)")
        }
    }
}
