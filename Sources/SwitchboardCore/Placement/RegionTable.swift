/// Region codes and their coordinates (`config/regions.csv`): `code,name,kind,latitude,longitude`.
public struct RegionTable: Sendable, Equatable {
    /// One region.
    public struct Region: Sendable, Equatable {
        public let code: String
        public let name: String
        public let kind: String
        public let point: GeoPoint
    }

    public private(set) var regions: [String: Region] = [:]

    public init() {}

    /// Parses the CSV; the first line is the header. Errors name the line.
    public init(csv: String) throws(SwitchboardError) {
        // "\r\n" is one Character in Swift, so splitting on "\n" alone would not split CRLF files.
        let lines = csv.split(omittingEmptySubsequences: false, whereSeparator: { $0 == "\n" || $0 == "\r\n" })
        guard lines.first?.trimmingCharacters(in: "\r") == "code,name,kind,latitude,longitude" else {
            throw SwitchboardError(.invalidConfiguration, "region table: the first line must be code,name,kind,latitude,longitude")
        }
        for (index, rawLine) in lines.enumerated().dropFirst() {
            let line = rawLine.trimmingCharacters(in: "\r")
            if line.isEmpty { continue }
            let fields = line.split(separator: ",", omittingEmptySubsequences: false).map(String.init)
            guard fields.count == 5, !fields[0].isEmpty, let lat = Double(fields[3]), let lon = Double(fields[4]),
                let point = GeoPoint(latitude: lat, longitude: lon)
            else {
                throw SwitchboardError(.invalidConfiguration, "region table line \(index + 1): expected code,name,kind,latitude,longitude")
            }
            let code = fields[0].lowercased()
            guard regions[code] == nil else {
                throw SwitchboardError(.invalidConfiguration, "region table line \(index + 1): duplicate code \(code)")
            }
            regions[code] = Region(code: code, name: fields[1], kind: fields[2], point: point)
        }
    }

    /// The table compiled into the binary (generated from `config/regions.csv`).
    public static var builtin: RegionTable {
        // The generated text is checked against config/regions.csv by a test; it parses.
        (try? RegionTable(csv: BuiltinRegions.csv)) ?? RegionTable()
    }

    /// Code → point, as the resolver wants it.
    public var points: [String: GeoPoint] { regions.mapValues(\.point) }

    /// The point of `code` (case-insensitive).
    public func point(of code: String) -> GeoPoint? { regions[code.lowercased()]?.point }
}

extension Substring {
    func trimmingCharacters(in set: String) -> String {
        var slice = self[...]
        while let last = slice.last, set.contains(last) { slice = slice.dropLast() }
        while let first = slice.first, set.contains(first) { slice = slice.dropFirst() }
        return String(slice)
    }
}
