import Foundation
import SwitchboardCore
import SwitchboardServer

/// The configuration file: ``ConfigurationLoader/load(fileContents:environment:overrides:source:)``
/// with the input as the JSON file and an empty environment; then the same bytes as the two CSV
/// data files the configuration names (``RegionTable``, ``IPPrefixTable``).
///
/// Errors are expected; only traps are findings. Inputs naming a `*_file` that is not a small regular
/// file (a device, a FIFO, a directory, /proc) are skipped: reading `/dev/zero` or a pipe would hang
/// the fuzzer, not find a parser bug, and the operator chooses those paths.
enum ConfigEntry {
    static func run(_ bytes: [UInt8]) -> FuzzFinding? {
        if namesUnsafeFile(bytes) { return nil }
        _ = try? ConfigurationLoader.load(fileContents: Data(bytes), environment: [:])
        let text = String(decoding: bytes, as: UTF8.self)
        _ = try? RegionTable(csv: text)
        if let table = try? IPPrefixTable(csv: text) {
            _ = table.lookup("192.0.2.1", regions: [:])
            _ = table.lookup("2001:db8::1", regions: [:])
        }
        return nil
    }

    /// Whether any key ending in `_file`, at any depth or dotted, holds a path that exists and
    /// is not a regular file.
    static func namesUnsafeFile(_ bytes: [UInt8]) -> Bool {
        guard let root = try? JSONSerialization.jsonObject(with: Data(bytes), options: [.fragmentsAllowed]) else { return false }
        var stack: [Any] = [root]
        while let value = stack.popLast() {
            if let object = value as? [String: Any] {
                for (key, member) in object {
                    if key.hasSuffix("_file"), let path = member as? String, !path.isEmpty, !isRegularOrMissing(path) { return true }
                    stack.append(member)
                }
            } else if let array = value as? [Any] {
                stack.append(contentsOf: array)
            }
        }
        return false
    }

    /// Missing, or a regular file of at most 1 MiB outside /proc, /sys and /dev (whose "regular"
    /// files can be endless, like /proc/kcore).
    static func isRegularOrMissing(_ path: String) -> Bool {
        let resolved = URL(fileURLWithPath: path).standardizedFileURL.resolvingSymlinksInPath().path
        if ["/proc", "/sys", "/dev"].contains(where: { resolved == $0 || resolved.hasPrefix($0 + "/") }) { return false }
        guard let attributes = try? FileManager.default.attributesOfItem(atPath: path) else { return true }
        let size = (attributes[.size] as? NSNumber)?.intValue ?? Int.max
        return (attributes[.type] as? FileAttributeType) == .typeRegular && size <= 1 << 20
    }
}
