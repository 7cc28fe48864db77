import Foundation
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// The append-only batch log (ADR 0010): the committed call batches not yet folded into the
/// SQLite tables, in numbered segment files in `<state directory>/batches/`.
///
/// A commit appends one record to the open segment: its length and CRC-32C (4 bytes each,
/// little-endian), then the batch (``BatchCodec``). That is one `write` of a few hundred bytes
/// instead of a transaction that dirties a page in each of a dozen B-trees. A fold seals the open
/// segment (the next commit opens a new one) and applies every sealed segment to the tables in
/// one transaction, which also records the highest segment folded; only then are the segment's
/// files removed. At open, segments at or below that number are removed, and the others are read
/// back: records up to the first one that is short or fails its checksum (a write cut off by a
/// crash), which, with nothing after it acknowledged, is where the log ends.
///
/// Sealed and open segments also stay in memory as rows, so a fold never reads a file back, and
/// so the store knows which calls have changes not yet in the tables.
final class BatchLog: Sendable {
    struct Segment: Sendable {
        let number: UInt64
        var batches: [[StoredRow]] = []
        var cids: Set<String> = []
    }

    private struct State: ~Copyable {
        var descriptor: Int32 = -1
        var open: Segment
        var openBytes = 0
        var sealed: [Segment] = []
    }

    let directory: String
    /// `fdatasync` after every append (`store.synchronous = full`).
    let syncEveryAppend: Bool
    private let state: Mutex<State>

    /// Opens the log in `directory`, removing segments at or below `foldedThrough` and reading
    /// back the others as sealed segments, oldest first.
    init(directory: String, foldedThrough: UInt64, syncEveryAppend: Bool) throws {
        self.directory = directory
        self.syncEveryAppend = syncEveryAppend
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        var recovered: [Segment] = []
        var highest = foldedThrough
        var damaged = false
        for (number, path) in try Self.segmentFiles(in: directory) {
            highest = max(highest, number)
            if number <= foldedThrough {
                try? FileManager.default.removeItem(atPath: path)
                continue
            }
            // After a damaged record nothing is taken, in this segment or a later one: a power
            // loss may cost the last commits (`store.synchronous = normal`), never one in the
            // middle while later ones stay.
            guard !damaged else {
                // Kept for inspection under another name; never read as part of the log again.
                try? FileManager.default.moveItem(atPath: path, toPath: path + ".after-damage")
                continue
            }
            let (batches, whole) = Self.readRecords(path)
            damaged = !whole
            var segment = Segment(number: number)
            for batch in batches { Self.add(batch, to: &segment) }
            recovered.append(segment)
        }
        state = Mutex(State(open: Segment(number: highest + 1), sealed: recovered))
    }

    deinit {
        state.withLock { state in
            if state.descriptor >= 0 { close(state.descriptor) }
        }
    }

    /// Appends one batch; when this returns the batch survives a crash of the process (and,
    /// with ``syncEveryAppend``, of the machine). A failed write leaves the segment as it was.
    func append(_ rows: [StoredRow]) throws {
        let body = BatchCodec.encode(rows)
        var record: [UInt8] = []
        record.reserveCapacity(body.count + 8)
        BatchCodec.appendLittleEndian(UInt64(body.count), byteCount: 4, to: &record)
        BatchCodec.appendLittleEndian(UInt64(CRC32C.checksum(body)), byteCount: 4, to: &record)
        record += body
        try state.withLock { state in
            if state.descriptor < 0 { state.descriptor = try openSegment(state.open.number) }
            try write(record, to: state.descriptor, restoringSize: state.openBytes)
            state.openBytes += record.count
            Self.add(rows, to: &state.open)
        }
    }

    /// Seals the open segment (when it holds anything) and returns every sealed segment, oldest
    /// first: what a fold applies.
    func seal() -> [Segment] {
        state.withLock { state in
            if !state.open.batches.isEmpty {
                if state.descriptor >= 0 { close(state.descriptor) }
                state.descriptor = -1
                let next = state.open.number + 1
                state.sealed.append(state.open)
                state.open = Segment(number: next)
                state.openBytes = 0
            }
            return state.sealed
        }
    }

    /// Forgets the sealed segments up to `number`, whose rows are now in the tables, and removes
    /// their files.
    func folded(through number: UInt64) {
        let gone = state.withLock { state in
            let gone = state.sealed.filter { $0.number <= number }
            state.sealed.removeAll { $0.number <= number }
            return gone
        }
        for segment in gone { try? FileManager.default.removeItem(atPath: path(segment.number)) }
    }

    /// Whether a batch not yet folded changed the call `cid`.
    func holds(cid: String) -> Bool {
        state.withLock { state in state.open.cids.contains(cid) || state.sealed.contains { $0.cids.contains(cid) } }
    }

    /// Batches appended and not yet folded.
    var pendingBatches: Int {
        state.withLock { state in state.open.batches.count + state.sealed.reduce(0) { $0 + $1.batches.count } }
    }

    private static func add(_ rows: [StoredRow], to segment: inout Segment) {
        segment.batches.append(rows)
        for row in rows { if let cid = row.callCID { segment.cids.insert(cid) } }
    }

    // MARK: - Files

    private func path(_ number: UInt64) -> String {
        let digits = String(number)
        return directory + "/" + String(repeating: "0", count: max(0, 20 - digits.count)) + digits + ".batches"
    }

    private func openSegment(_ number: UInt64) throws -> Int32 {
        let descriptor = Glibc.open(path(number), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0o600)
        guard descriptor >= 0 else { throw POSIXError(errno, "opening a batch log segment") }
        if syncEveryAppend {
            // The new file's directory entry must survive a power loss too.
            let directoryDescriptor = Glibc.open(directory, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
            if directoryDescriptor >= 0 {
                _ = fsync(directoryDescriptor)
                close(directoryDescriptor)
            }
        }
        return descriptor
    }

    private func write(_ record: [UInt8], to descriptor: Int32, restoringSize size: Int) throws {
        do {
            // Foundation's write loops over partial writes and retries EINTR.
            try FileHandle(fileDescriptor: descriptor, closeOnDealloc: false).write(contentsOf: record)
        } catch {
            // A part of the record may be in the file: cut it off, so the next record follows
            // the last whole one.
            _ = ftruncate(descriptor, off_t(size))
            throw error
        }
        if syncEveryAppend, fdatasync(descriptor) != 0 { throw POSIXError(errno, "syncing the batch log") }
    }

    /// The segment files in `directory`, by number.
    private static func segmentFiles(in directory: String) throws -> [(UInt64, String)] {
        try FileManager.default.contentsOfDirectory(atPath: directory).compactMap { name -> (UInt64, String)? in
            guard name.hasSuffix(".batches"), let number = UInt64(name.dropLast(".batches".count)) else { return nil }
            return (number, directory + "/" + name)
        }.sorted { $0.0 < $1.0 }
    }

    /// The whole, intact records of a segment file, up to the first that is not, and whether
    /// the file held nothing else.
    static func readRecords(_ path: String) -> (batches: [[StoredRow]], whole: Bool) {
        guard let data = FileManager.default.contents(atPath: path) else { return ([], false) }
        let bytes = [UInt8](data)
        var batches: [[StoredRow]] = []
        var offset = 0
        while bytes.count - offset >= 8 {
            let length = Int(Self.uint32(bytes, offset))
            let checksum = Self.uint32(bytes, offset + 4)
            guard length <= bytes.count - offset - 8 else { break }
            let body = bytes[(offset + 8)..<(offset + 8 + length)]
            guard CRC32C.checksum(body) == checksum, let rows = BatchCodec.decode(body) else { break }
            batches.append(rows)
            offset += 8 + length
        }
        return (batches, offset == bytes.count)
    }

    private static func uint32(_ bytes: [UInt8], _ offset: Int) -> UInt32 {
        (0..<4).reduce(UInt32(0)) { $0 | UInt32(bytes[offset + $1]) << (8 * UInt32($1)) }
    }
}

extension POSIXError {
    init(_ code: Int32, _ what: String) {
        self.init(POSIXErrorCode(rawValue: code) ?? .EIO, userInfo: [NSLocalizedDescriptionKey: "\(what): \(String(cString: strerror(code)))"])
    }
}
