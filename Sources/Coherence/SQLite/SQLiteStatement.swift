import CCoherenceSQLite
import Foundation

/// A prepared statement. Owned by one ``SQLiteConnection``; used on one thread at a time.
package final class SQLiteStatement {
    package let handle: OpaquePointer
    package let sql: String
    unowned let connection: SQLiteConnection
    package let columnCount: Int32
    package let parameterCount: Int32
    /// The connection's ``SQLiteConnection/textIsUTF8`` when the statement was prepared (it
    /// never changes: it is read once, when the connection opens).
    let textIsUTF8: Bool
    /// The values of the result columns as of the last ``currentRow()`` (see there): one
    /// `sqlite3_value` pointer per column, nil until the first row.
    private let rowValues: UnsafeMutablePointer<OpaquePointer?>
    /// The program's number of result columns when ``rowValues`` was filled.
    private var rowValuesColumnCount: Int32 = 0
    /// How many times ``currentRow()`` found the result row in other registers than the row
    /// before (tests read it).
    package private(set) var rowRegisterChanges = 0

    init(connection: SQLiteConnection, sql: String) throws(SQLiteError) {
        var stmt: OpaquePointer?
        let rc = sqlite3_prepare_v3(connection.handle, sql, -1, UInt32(SQLITE_PREPARE_PERSISTENT), &stmt, nil)
        guard rc == SQLITE_OK, let stmt else {
            throw connection.error(code: rc, sql: sql)
        }
        self.handle = stmt
        self.sql = sql
        self.connection = connection
        self.columnCount = sqlite3_column_count(stmt)
        self.parameterCount = sqlite3_bind_parameter_count(stmt)
        self.textIsUTF8 = connection.textIsUTF8
        let columns = Int(max(columnCount, 1))
        self.rowValues = .allocate(capacity: columns)
        self.rowValues.initialize(repeating: nil, count: columns)
    }

    /// The number of rows the statement returned in its last two complete runs (most recent
    /// first); 0 before it has run.
    private var rowCounts: (last: Int, previous: Int) = (0, 0)

    deinit {
        sqlite3_finalize(handle)
        rowValues.deallocate()
    }

    /// How many rows the next run is likely to return: the smaller of the last two runs' counts
    /// (0 until it has run twice). The smaller one, so that a statement whose runs alternate
    /// between many rows and a few (the same SQL, other bound values) expects a few: a reader
    /// that sizes its tables for too many rows pays for tables it does not fill, one that
    /// sizes them for too few only grows them as it would without an estimate.
    package var expectedRowCount: Int { min(rowCounts.last, rowCounts.previous) }

    /// Records the number of rows a complete run returned.
    package func noteRowCount(_ count: Int) {
        rowCounts = (count, rowCounts.last)
    }

    /// Resets the statement so it can run again. Bindings are kept until rebound.
    @inline(__always) package func reset() {
        sqlite3_reset(handle)
    }

    package func clearBindings() {
        sqlite3_clear_bindings(handle)
    }

    // MARK: Binding (1-based indexes, as SQLite)

    @inline(__always) package func bindNull(_ index: Int32) {
        sqlite3_bind_null(handle, index)
    }

    @inline(__always) package func bind(_ value: Int64, at index: Int32) {
        sqlite3_bind_int64(handle, index, value)
    }

    /// Binds a `Double` exactly: a REAL, or for NaN (which SQLite would bind as NULL) and −0.0
    /// (which a REAL column keeps as 0) the blob of ``StoredValue/init(double:)``.
    @inline(__always) package func bind(_ value: Double, at index: Int32) {
        if value.isNaN || value.bitPattern == StoredValue.negativeZeroBits {
            bind(StoredValue(double: value), at: index)
        } else {
            sqlite3_bind_double(handle, index, value)
        }
    }

    @inline(__always) package func bind(_ value: String, at index: Int32) {
        var value = value
        value.withUTF8 { buf in
            if let base = buf.baseAddress {
                _ = sqlite3_bind_text(handle, index, UnsafeRawPointer(base).assumingMemoryBound(to: CChar.self),
                                      Int32(buf.count), coherence_sqlite3_transient())
            } else {
                _ = sqlite3_bind_text(handle, index, "", 0, coherence_sqlite3_transient())
            }
        }
    }

    @inline(__always) package func bind(_ value: Data, at index: Int32) {
        value.withUnsafeBytes { buf in
            if let base = buf.baseAddress {
                _ = sqlite3_bind_blob64(handle, index, base, sqlite3_uint64(buf.count), coherence_sqlite3_transient())
            } else {
                _ = sqlite3_bind_zeroblob(handle, index, 0)
            }
        }
    }

    @inline(__always) package func bind(_ value: StoredValue, at index: Int32) {
        switch value {
        case .null: sqlite3_bind_null(handle, index)
        case .integer(let v): sqlite3_bind_int64(handle, index, v)
        case .real(let v):
            // A NaN made as `.real` (not through `StoredValue(double:)`) still is not NULL.
            if v.isNaN { bind(StoredValue(double: v), at: index) } else { sqlite3_bind_double(handle, index, v) }
        case .text(let v): bind(v, at: index)
        case .blob(let v): bind(v, at: index)
        }
    }

    /// Binds any ``PersistentValue`` (Int, String, Date, UUID, Decimal, …).
    package func bind<T: PersistentValue>(_ value: T, at index: Int32) {
        bind(value.storedValue, at: index)
    }

    /// Binds values to parameters 1…n.
    package func bind(_ values: [StoredValue]) {
        for (i, v) in values.enumerated() { bind(v, at: Int32(i + 1)) }
    }

    // MARK: Stepping

    /// Steps once. Returns true when a row is available.
    @inline(__always) package func step() throws(SQLiteError) -> Bool {
        let rc = sqlite3_step(handle)
        if rc == SQLITE_ROW { return true }
        if rc == SQLITE_DONE { return false }
        let error = connection.error(code: rc, sql: sql)
        sqlite3_reset(handle)
        throw error
    }

    /// Runs a statement that returns no rows.
    package func execute() throws(SQLiteError) {
        defer { sqlite3_reset(handle) }
        while try step() {}
    }

    // MARK: Reading (0-based column indexes, as SQLite)

    @inline(__always) package func isNull(_ column: Int32) -> Bool {
        sqlite3_column_type(handle, column) == SQLITE_NULL
    }

    @inline(__always) package func int64(_ column: Int32) -> Int64 {
        sqlite3_column_int64(handle, column)
    }

    @inline(__always) package func double(_ column: Int32) -> Double {
        sqlite3_column_double(handle, column)
    }

    @inline(__always) package func string(_ column: Int32) -> String {
        guard let p = sqlite3_column_text(handle, column) else { return "" }
        let n = Int(sqlite3_column_bytes(handle, column))
        return String(decoding: UnsafeBufferPointer(start: p, count: n), as: UTF8.self)
    }

    @inline(__always) package func data(_ column: Int32) -> Data {
        let n = Int(sqlite3_column_bytes(handle, column))
        guard n > 0, let p = sqlite3_column_blob(handle, column) else { return Data() }
        return Data(bytes: p, count: n)
    }

    /// Reads a column as a ``StoredValue`` with its storage class.
    ///
    /// One `sqlite3_column_value` call, then the value's accessors: each `sqlite3_column_*`
    /// call would look the column up again. (The value is "unprotected" in SQLite's terms,
    /// which only matters to connections shared between threads; a connection is used by one
    /// thread at a time and opened with `SQLITE_OPEN_NOMUTEX`.) To read every column of many
    /// rows, ``currentRow()`` is cheaper.
    @inline(__always) package func value(_ column: Int32) -> StoredValue {
        guard let v = sqlite3_column_value(handle, column) else { return .null }
        return value(of: v)
    }

    /// The current row's column values, one `sqlite3_value` per result column (index 0 is
    /// the first column, up to ``columnCount``), valid until the next step or reset. Read
    /// them with ``value(of:)`` and ``int64(of:)``; a column past the program's own columns
    /// reads as NULL.
    ///
    /// Each `sqlite3_column_*` call locks the connection's mutex (a call even when there is
    /// none), looks the column up, and records the API's exit state: about 50 instructions,
    /// more than reading the value itself. A result column's value is a register of the
    /// statement's program: the result row's registers start at one register, and column `i`
    /// is the `i`-th after it (for `i` below the program's column count; SQLite returns a
    /// static NULL for the others). So the registers a statement returns its rows in are the
    /// same from row to row, and this asks SQLite for the first column only. It asks for all
    /// of them again when that one's register is not the one it was (a compound SELECT can
    /// return rows from several sets of registers; a statement SQLite prepared again after a
    /// schema change has a new program), or when the program's column count changed (a new
    /// program can start its registers where the old one's were, and `SELECT *` or a view
    /// can have another column count after a schema change).
    ///
    /// - Complexity: O(1) per row; O(columns) when the registers change.
    @inline(__always) package func currentRow() -> UnsafePointer<OpaquePointer?> {
        assert(columnCount > 0, "A statement that returns rows has columns.")
        let first = sqlite3_column_value(handle, 0)
        if first != rowValues[0] || sqlite3_column_count(handle) != rowValuesColumnCount { refreshRowValues(first) }
        #if DEBUG
        for column in 0..<min(columnCount, rowValuesColumnCount) {
            assert(rowValues[Int(column)] == sqlite3_column_value(handle, column))
        }
        #endif
        return UnsafePointer(rowValues)
    }

    private func refreshRowValues(_ first: OpaquePointer?) {
        rowRegisterChanges &+= 1
        rowValuesColumnCount = sqlite3_column_count(handle)
        rowValues[0] = first
        var column: Int32 = 1
        while column < columnCount {
            // Past the program's columns: nil, read as NULL (SQLite would return its static
            // NULL value, and set a range error on the connection).
            rowValues[Int(column)] = column < rowValuesColumnCount ? sqlite3_column_value(handle, column) : nil
            column += 1
        }
    }

    /// An integer column value of ``currentRow()``, as `sqlite3_column_int64` would read it.
    @inline(__always) package func int64(of value: OpaquePointer?) -> Int64 {
        guard let value else { return 0 }
        return sqlite3_value_int64(value)
    }

    /// A column value of ``currentRow()`` (or of ``value(_:)``) as a ``StoredValue``.
    @inline(__always) package func value(of v: OpaquePointer?) -> StoredValue {
        guard let v else { return .null }
        switch sqlite3_value_type(v) {
        case SQLITE_INTEGER: return .integer(sqlite3_value_int64(v))
        case SQLITE_FLOAT: return .real(sqlite3_value_double(v))
        case SQLITE_TEXT:
            if textIsUTF8 {
                // The stored bytes as they are: `sqlite3_value_text` would first copy them to
                // add a terminating zero. (In a UTF-16 database they would be UTF-16.)
                let p = sqlite3_value_blob(v)
                let n = Int(sqlite3_value_bytes(v))
                guard n > 0, let p else { return .text("") }
                return .text(String(decoding: UnsafeRawBufferPointer(start: p, count: n), as: UTF8.self))
            }
            guard let p = sqlite3_value_text(v) else { return .text("") }
            let n = Int(sqlite3_value_bytes(v))
            return .text(String(decoding: UnsafeBufferPointer(start: p, count: n), as: UTF8.self))
        case SQLITE_BLOB:
            let n = Int(sqlite3_value_bytes(v))
            guard n > 0, let p = sqlite3_value_blob(v) else { return .blob(Data()) }
            return .blob(Data(bytes: p, count: n))
        default: return .null
        }
    }

    /// Reads a column as a typed value; throws when the stored value is not of that type.
    package func decode<T: PersistentValue>(_ type: T.Type = T.self, at column: Int32) throws(SQLiteError) -> T {
        let v = value(column)
        guard let t = T(storedValue: v) else {
            throw SQLiteError(extendedResultCode: SQLITE_MISMATCH,
                              message: "column \(column) holds \(v.kindName), not \(T.self)", sql: sql)
        }
        return t
    }

    /// Runs the statement and collects every row with `row`.
    package func rows<T>(_ row: (SQLiteStatement) throws -> T) throws -> [T] {
        defer { sqlite3_reset(handle) }
        var result: [T] = []
        while try step() { result.append(try row(self)) }
        return result
    }
}

extension StoredValue {
    var kindName: String {
        switch self {
        case .null: return "NULL"
        case .integer: return "an integer"
        case .real: return "a real"
        case .text: return "text"
        case .blob: return "a blob"
        }
    }
}

@available(*, unavailable)
extension SQLiteStatement: Sendable {}
