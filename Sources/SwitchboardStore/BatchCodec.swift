import Foundation
import GRDB

/// The bytes of one batch in the batch log: the batch's ``StoredRow``s, each as its kind, its
/// value count and its values (null, 64-bit integer, double, text or blob, each tagged; lengths
/// as LEB128 varints). A row with the value count of an earlier version of its kind (a `.call`
/// row without `event_seq`) is read as it is: it runs that version's statement. The framing that makes a record safe to find again after a crash (length
/// and checksum) is ``BatchLog``'s.
enum BatchCodec {
    private enum Tag: UInt8 {
        case null = 0, integer, double, text, blob
    }

    static func encode(_ rows: [StoredRow]) -> [UInt8] {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(rows.count * 160)
        appendVarint(UInt64(rows.count), to: &bytes)
        for row in rows {
            bytes.append(row.kind.rawValue)
            bytes.append(UInt8(row.values.count))
            for value in row.values { append(value, to: &bytes) }
        }
        return bytes
    }

    /// The rows `bytes` encode; `nil` when they are not a whole, well-formed batch.
    static func decode(_ bytes: some Collection<UInt8>) -> [StoredRow]? {
        var reader = Reader(bytes: Array(bytes))
        guard let count = reader.varint(), count <= UInt64(bytes.count) else { return nil }
        var rows: [StoredRow] = []
        rows.reserveCapacity(Int(count))
        for _ in 0..<count {
            guard let kindByte = reader.byte(), let kind = StoredRow.Kind(rawValue: kindByte), let arity = reader.byte() else { return nil }
            var values: [DatabaseValue] = []
            values.reserveCapacity(Int(arity))
            for _ in 0..<arity {
                guard let value = reader.value() else { return nil }
                values.append(value)
            }
            // A record of an earlier version may carry fewer values (`StoredRow(decoding:values:)`).
            guard let row = StoredRow(decoding: kind, values: values) else { return nil }
            rows.append(row)
        }
        return reader.atEnd ? rows : nil
    }

    private static func append(_ value: DatabaseValue, to bytes: inout [UInt8]) {
        switch value.storage {
        case .null:
            bytes.append(Tag.null.rawValue)
        case .int64(let integer):
            bytes.append(Tag.integer.rawValue)
            appendVarint(UInt64(bitPattern: (integer << 1) ^ (integer >> 63)), to: &bytes)
        case .double(let double):
            bytes.append(Tag.double.rawValue)
            appendLittleEndian(double.bitPattern, byteCount: 8, to: &bytes)
        case .string(let string):
            bytes.append(Tag.text.rawValue)
            appendVarint(UInt64(string.utf8.count), to: &bytes)
            bytes.append(contentsOf: string.utf8)
        case .blob(let data):
            bytes.append(Tag.blob.rawValue)
            appendVarint(UInt64(data.count), to: &bytes)
            bytes.append(contentsOf: data)
        }
    }

    /// The low `byteCount` bytes of `value`, least significant first.
    static func appendLittleEndian(_ value: UInt64, byteCount: Int, to bytes: inout [UInt8]) {
        for index in 0..<byteCount { bytes.append(UInt8(truncatingIfNeeded: value >> (8 * UInt64(index)))) }
    }

    static func appendVarint(_ value: UInt64, to bytes: inout [UInt8]) {
        var rest = value
        while rest >= 0x80 {
            bytes.append(UInt8(truncatingIfNeeded: rest) | 0x80)
            rest >>= 7
        }
        bytes.append(UInt8(rest))
    }

    private struct Reader {
        let bytes: [UInt8]
        var offset = 0

        var atEnd: Bool { offset == bytes.count }

        mutating func byte() -> UInt8? {
            guard offset < bytes.count else { return nil }
            defer { offset += 1 }
            return bytes[offset]
        }

        mutating func varint() -> UInt64? {
            var value: UInt64 = 0
            for shift in stride(from: 0, to: 64, by: 7) {
                guard let byte = byte() else { return nil }
                value |= UInt64(byte & 0x7F) << UInt64(shift)
                if byte < 0x80 { return value }
            }
            return nil
        }

        mutating func take(_ count: Int) -> ArraySlice<UInt8>? {
            guard count >= 0, count <= bytes.count - offset else { return nil }
            defer { offset += count }
            return bytes[offset..<offset + count]
        }

        mutating func value() -> DatabaseValue? {
            guard let tagByte = byte(), let tag = Tag(rawValue: tagByte) else { return nil }
            switch tag {
            case .null:
                return .null
            case .integer:
                guard let zigzag = varint() else { return nil }
                return Int64(bitPattern: (zigzag >> 1) ^ (0 &- (zigzag & 1))).databaseValue
            case .double:
                guard let raw = take(8) else { return nil }
                let bits = raw.reversed().reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
                return Double(bitPattern: bits).databaseValue
            case .text:
                guard let length = varint(), length <= UInt64(Int.max), let utf8 = take(Int(length)) else { return nil }
                guard let string = String(validating: utf8, as: UTF8.self) else { return nil }
                return string.databaseValue
            case .blob:
                guard let length = varint(), length <= UInt64(Int.max), let raw = take(Int(length)) else { return nil }
                return Data(raw).databaseValue
            }
        }
    }
}

/// CRC-32C (Castagnoli), the checksum of a batch log record.
enum CRC32C {
    private static let table: [UInt32] = (0..<256).map { index in
        var crc = UInt32(index)
        for _ in 0..<8 { crc = crc & 1 == 1 ? (crc >> 1) ^ 0x82F6_3B78 : crc >> 1 }
        return crc
    }

    static func checksum(_ bytes: some Sequence<UInt8>) -> UInt32 {
        var crc: UInt32 = 0xFFFF_FFFF
        for byte in bytes { crc = table[Int((crc ^ UInt32(byte)) & 0xFF)] ^ (crc >> 8) }
        return crc ^ 0xFFFF_FFFF
    }
}
