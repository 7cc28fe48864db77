/// An operator-supplied table of IP prefixes (CIDR) with a location each; longest prefix wins.
///
/// CSV, one entry a line: `cidr,region` or `cidr,latitude,longitude`; `#` starts a comment.
public struct IPPrefixTable: Sendable, Equatable {
    /// Where a prefix's clients are.
    public enum Place: Sendable, Equatable {
        case region(String)
        case point(GeoPoint)
    }

    struct Entry: Sendable, Equatable {
        let prefix: IPPrefix
        let place: Place
    }

    private(set) var entries: [Entry] = []

    public init() {}

    /// Number of prefixes.
    public var count: Int { entries.count }

    /// Parses the CSV text; errors name the line.
    public init(csv: String) throws(SwitchboardError) {
        // "\r\n" is one Character in Swift, so splitting on "\n" alone would not split CRLF files.
        for (index, rawLine) in csv.split(omittingEmptySubsequences: false, whereSeparator: { $0 == "\n" || $0 == "\r\n" }).enumerated() {
            let line = rawLine.split(separator: "#", maxSplits: 1, omittingEmptySubsequences: false).first.map(String.init) ?? ""
            let fields = line.split(separator: ",").map { $0.trimmingCharactersInSet(" \t\r") }
            if fields.isEmpty || (fields.count == 1 && fields[0].isEmpty) { continue }
            guard let entry = Self.entry(fields) else {
                throw SwitchboardError(.invalidConfiguration, "IP prefix table line \(index + 1): expected cidr,region or cidr,latitude,longitude")
            }
            entries.append(entry)
        }
        entries.sort { $0.prefix.length > $1.prefix.length }
    }

    private static func entry(_ fields: [String]) -> Entry? {
        guard fields[0].contains("/"), let prefix = IPPrefix(fields[0]) else { return nil }
        let place: Place
        if fields.count == 2, !fields[1].isEmpty {
            place = .region(fields[1].lowercased())
        } else if fields.count == 3, let lat = Double(fields[1]), let lon = Double(fields[2]), let point = GeoPoint(latitude: lat, longitude: lon) {
            place = .point(point)
        } else {
            return nil
        }
        return Entry(prefix: prefix, place: place)
    }

    /// The location of `address` by longest matching prefix, resolving region codes in `regions`.
    public func lookup(_ address: String, regions: [String: GeoPoint]) -> GeoPoint? {
        guard let bytes = IPAddressParser.parse(address) else { return nil }
        for entry in entries where entry.prefix.contains(bytes) {
            switch entry.place {
            case .point(let point): return point
            case .region(let code): if let point = regions[code] { return point }
            }
        }
        return nil
    }
}

extension Substring {
    fileprivate func trimmingCharactersInSet(_ set: String) -> String {
        var slice = self[...]
        while let first = slice.first, set.contains(first) { slice = slice.dropFirst() }
        while let last = slice.last, set.contains(last) { slice = slice.dropLast() }
        return String(slice)
    }
}
