import Foundation
import PostgresNIO

/// A table a batch writes to: its columns in order, the first `key` of them its primary key.
struct PostgresTable: Sendable {
    enum Kind: String, Sendable {
        case text, bigint, timestamptz, boolean
    }

    /// What a save does to a row already stored under its key.
    enum Conflict: Sendable {
        /// Every column but the key is replaced (the saves of every store).
        case replace
        /// The stored row stays (a webhook message is written once).
        case keep
    }

    let name: String
    let columns: [(name: String, kind: Kind)]
    /// How many leading columns are the key; 0 for a log whose rows are appended in order.
    let key: Int
    let conflict: Conflict
    /// A column naming who holds a row (a connection's `node`): a save or delete that names
    /// a holder changes only a row held by nobody, by that holder, or by a holder no longer
    /// live (`live` is SQL that holds when the holder it is given is), so a node cannot undo a
    /// takeover it has not heard of. A write naming nobody changes any row.
    struct Fence: Sendable {
        let column: String
        let live: @Sendable (_ holder: String) -> String
    }

    let fence: (name: String, kind: Kind, live: @Sendable (String) -> String)?

    init(_ name: String, key: Int, conflict: Conflict = .replace, fence: Fence? = nil, _ columns: KeyValuePairs<String, Kind>) {
        self.name = name
        self.columns = columns.map { (name: $0.key, kind: $0.value) }
        self.key = key
        self.conflict = conflict
        self.fence = fence.map { fence in
            guard let column = columns.first(where: { $0.key == fence.column }) else { preconditionFailure("\(name): no fence column \(fence.column)") }
            return (name: fence.column, kind: column.value, live: fence.live)
        }
    }

    /// Whether the stored row may be written by the write whose holder is `writer`.
    private func fenced(writer: String) -> String {
        guard let fence else { return "TRUE" }
        let held = "\(name).\(fence.name)"
        return "\(held) IS NULL OR \(writer) IS NULL OR \(held) = \(writer) OR NOT (\(fence.live(held)))"
    }

    /// The columns a delete binds: the key, then the fence (when the table has one).
    var deleteColumns: [(name: String, kind: Kind)] {
        Array(columns.prefix(key)) + (fence.map { [(name: $0.name, kind: $0.kind)] } ?? [])
    }

    private var names: String { columns.map(\.name).joined(separator: ", ") }

    /// `unnest($1::text[], $2::bigint[], …)` over the given columns, numbered from 1.
    private func unnest(_ columns: ArraySlice<(name: String, kind: Kind)>) -> String {
        "unnest(" + columns.enumerated().map { "$\($0.offset + 1)::\($0.element.kind.rawValue)[]" }.joined(separator: ", ") + ")"
    }

    /// Writes every row of the arrays bound: an upsert by key, or an append in array order.
    var insertSQL: String {
        guard key > 0 else {
            return "INSERT INTO \(name) (\(names)) SELECT \(names) FROM \(unnest(columns[...])) WITH ORDINALITY AS u(\(names), n) ORDER BY n"
        }
        let keys = columns.prefix(key).map(\.name).joined(separator: ", ")
        let action: String
        switch conflict {
        case .replace:
            action = "DO UPDATE SET " + columns.dropFirst(key).map { "\($0.name) = EXCLUDED.\($0.name)" }.joined(separator: ", ")
                + (fence.map { " WHERE " + fenced(writer: "EXCLUDED.\($0.name)") } ?? "")
        case .keep: action = "DO NOTHING"
        }
        return "INSERT INTO \(name) (\(names)) SELECT * FROM \(unnest(columns[...])) ON CONFLICT (\(keys)) \(action)"
    }

    /// Deletes the rows whose keys are bound, one array per key column (then the fence's).
    var deleteSQL: String {
        let keys = columns.prefix(key)
        guard let fence else {
            return "DELETE FROM \(name) WHERE (\(keys.map(\.name).joined(separator: ", "))) IN (SELECT * FROM \(unnest(keys)))"
        }
        let bound = deleteColumns.map(\.name)
        let matches = keys.map { "\(name).\($0.name) = d.\($0.name)" }.joined(separator: " AND ")
        return "DELETE FROM \(name) USING \(unnest(deleteColumns[...])) AS d(\(bound.joined(separator: ", "))) WHERE \(matches)"
            + " AND (\(fenced(writer: "d.\(fence.name)")))"
    }
}

/// One value of a row, of its column's kind.
enum PostgresCell: Hashable, Sendable {
    case text(String?)
    case bigint(Int64?)
    case timestamptz(Date?)
    case boolean(Bool?)

    /// Texts are equal when their UTF-8 bytes are, as in the key columns' "C" collation (Swift
    /// would call "Å" and "Å" equal, and merge two rows PostgreSQL keeps apart).
    static func == (lhs: Self, rhs: Self) -> Bool {
        switch (lhs, rhs) {
        case (.text(let a), .text(let b)):
            switch (a, b) {
            case (nil, nil): return true
            case (let a?, let b?): return a.utf8.elementsEqual(b.utf8)
            default: return false
            }
        case (.bigint(let a), .bigint(let b)): return a == b
        case (.timestamptz(let a), .timestamptz(let b)): return a == b
        case (.boolean(let a), .boolean(let b)): return a == b
        default: return false
        }
    }

    func hash(into hasher: inout Hasher) {
        switch self {
        case .text(let text):
            hasher.combine(0)
            if let text { for byte in text.utf8 { hasher.combine(byte) } } else { hasher.combine(-1) }
        case .bigint(let value): hasher.combine(1); hasher.combine(value)
        case .timestamptz(let value): hasher.combine(2); hasher.combine(value)
        case .boolean(let value): hasher.combine(3); hasher.combine(value)
        }
    }
}

/// The rows of one commit, folded per table and bound as arrays: a few statements per batch
/// whatever its size, rather than one per row (each a round trip to the server while the
/// batch's transaction is open).
///
/// A batch's meaning is kept: of the saves and deletes of one key the last one wins, as when
/// they ran in order, and appended rows keep their order. Tables have no foreign keys between
/// them, so the order of tables is free.
struct PostgresBatch {
    private enum Last {
        case save([PostgresCell])
        /// The key's cells, then the fence's when the table has one.
        case delete([PostgresCell])
    }

    private struct Rows {
        let table: PostgresTable
        /// Keys in the order first seen, and what was done last to each (tables with a key).
        var keys: [[PostgresCell]] = []
        var last: [[PostgresCell]: Last] = [:]
        /// Rows in order (tables without a key).
        var appended: [[PostgresCell]] = []
    }

    private var tables: [String: Rows] = [:]
    private var order: [String] = []

    private mutating func rows(_ table: PostgresTable, _ body: (inout Rows) -> Void) {
        if tables[table.name] == nil {
            tables[table.name] = Rows(table: table)
            order.append(table.name)
        }
        body(&tables[table.name]!)
    }

    /// Saves `row`, one cell per column of `table` (appended when the table has no key).
    mutating func save(_ table: PostgresTable, _ row: [PostgresCell]) {
        precondition(row.count == table.columns.count, "\(table.name): \(row.count) cells for \(table.columns.count) columns")
        rows(table) { rows in
            guard table.key > 0 else { return rows.appended.append(row) }
            let key = Array(row.prefix(table.key))
            if rows.last.updateValue(.save(row), forKey: key) == nil { rows.keys.append(key) }
        }
    }

    /// Deletes the row with this key (one cell per key column), if held by `holder` or by
    /// nobody on a fenced table (`holder` is ignored on others).
    mutating func delete(_ table: PostgresTable, key: [PostgresCell], holder: PostgresCell? = nil) {
        precondition(table.key > 0 && key.count == table.key, "\(table.name): a delete needs its \(table.key) key cells")
        let cells = table.fence.map { fence in key + [holder ?? Self.null(fence.kind)] } ?? key
        rows(table) { rows in
            if rows.last.updateValue(.delete(cells), forKey: key) == nil { rows.keys.append(key) }
        }
    }

    private static func null(_ kind: PostgresTable.Kind) -> PostgresCell {
        switch kind {
        case .text: .text(nil)
        case .bigint: .bigint(nil)
        case .timestamptz: .timestamptz(nil)
        case .boolean: .boolean(nil)
        }
    }

    /// The statements, at most two per table touched (its deletes, then its saves).
    func statements() throws -> [(String, PostgresBindings)] {
        var statements: [(String, PostgresBindings)] = []
        for name in order {
            let rows = tables[name]!
            let table = rows.table
            var saved: [[PostgresCell]] = rows.appended
            var deleted: [[PostgresCell]] = []
            for key in rows.keys {
                switch rows.last[key]! {
                case .save(let row): saved.append(row)
                case .delete(let cells): deleted.append(cells)
                }
            }
            if !deleted.isEmpty { statements.append((table.deleteSQL, try Self.bind(deleted, table.deleteColumns[...]))) }
            if !saved.isEmpty { statements.append((table.insertSQL, try Self.bind(saved, table.columns[...]))) }
        }
        return statements
    }

    /// One array per column, in row order.
    private static func bind(_ rows: [[PostgresCell]], _ columns: ArraySlice<(name: String, kind: PostgresTable.Kind)>) throws -> PostgresBindings {
        var binds = PostgresBindings()
        for (index, column) in zip(0..., columns) {
            let cells = rows.map { $0[index] }
            switch column.kind {
            case .text: try binds.append(ColumnArray(cells.map { if case .text(let v) = $0 { v } else { mismatch(column.name) } }))
            case .bigint: try binds.append(ColumnArray(cells.map { if case .bigint(let v) = $0 { v } else { mismatch(column.name) } }))
            case .timestamptz: try binds.append(ColumnArray(cells.map { if case .timestamptz(let v) = $0 { v } else { mismatch(column.name) } }))
            case .boolean: try binds.append(ColumnArray(cells.map { if case .boolean(let v) = $0 { v } else { mismatch(column.name) } }))
            }
        }
        return binds
    }

    private static func mismatch(_ column: String) -> Never {
        preconditionFailure("a cell of another kind than column \(column)")
    }
}

/// A column's values as one PostgreSQL array in the binary format, NULL where a value is nil
/// (postgres-nio's own arrays have no NULL elements).
struct ColumnArray<Element: PostgresArrayEncodable>: PostgresEncodable {
    let values: [Element?]

    init(_ values: [Element?]) { self.values = values }

    static var psqlType: PostgresDataType { Element.psqlArrayType }
    static var psqlFormat: PostgresFormat { .binary }

    func encode<JSONEncoder: PostgresJSONEncoder>(into buffer: inout ByteBuffer, context: PostgresEncodingContext<JSONEncoder>) throws {
        buffer.writeInteger(1, as: Int32.self)  // dimensions
        buffer.writeInteger(values.contains { $0 == nil } ? 1 : 0, as: Int32.self)  // has NULLs
        buffer.writeInteger(Element.psqlType.rawValue)
        buffer.writeInteger(Int32(values.count))  // length of the one dimension
        buffer.writeInteger(1, as: Int32.self)  // its lower bound
        for value in values {
            guard let value else {
                buffer.writeInteger(-1, as: Int32.self)
                continue
            }
            let lengthIndex = buffer.writerIndex
            buffer.writeInteger(0, as: Int32.self)
            let start = buffer.writerIndex
            try value.encode(into: &buffer, context: context)
            buffer.setInteger(Int32(buffer.writerIndex - start), at: lengthIndex)
        }
    }
}
