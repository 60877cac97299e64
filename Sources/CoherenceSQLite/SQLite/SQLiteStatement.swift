import CCoherenceSQLite
import Foundation

/// A prepared statement. Owned by one ``SQLiteConnection``; used on one thread at a time.
///
/// The calls a store makes per row (``step()``, ``value(_:)``, ``int64(_:)``) are inlinable, so
/// that the store's row loop, in another target, reads a row without a call per column.
@usableFromInline
package final class SQLiteStatement {
    @usableFromInline package let handle: OpaquePointer
    package let sql: String
    // Invariant: the connection owns its statements (its cache) and finalizes them before it
    // closes; `unowned` (checked) traps rather than read a freed connection.
    unowned let connection: SQLiteConnection
    package let columnCount: Int32
    package let parameterCount: Int32
    /// The connection's ``SQLiteConnection/textIsUTF8`` when the statement was prepared (it
    /// never changes: it is read once, when the connection opens).
    @usableFromInline let textIsUTF8: Bool
    init(connection: SQLiteConnection, sql: String) throws(SQLiteError) {
        var stmt: OpaquePointer?
        let rc = sqlite3_prepare_v3(connection.handle, sql, -1, UInt32(SQLITE_PREPARE_PERSISTENT), &stmt, nil)
        guard rc == SQLITE_OK, let stmt else {
            throw connection.error(code: rc, sql: sql)
        }
        self.handle = stmt
        self.sql = sql
        self.sqlLength = sql.utf8.count
        self.connection = connection
        self.columnCount = sqlite3_column_count(stmt)
        self.parameterCount = sqlite3_bind_parameter_count(stmt)
        self.textIsUTF8 = connection.textIsUTF8
    }

    /// The number of rows the statement returned in its last two complete runs (most recent
    /// first); 0 before it has run.
    private var rowCounts: (last: Int, previous: Int) = (0, 0)
    /// The number of complete runs recorded (counted up to 2).
    private var recordedRuns = 0
    /// The length of ``sql`` in UTF-8 bytes (the connection's cache compares it first).
    // (Declared after the fields the inlinable readers use, which keep their places.)
    let sqlLength: Int

    deinit {
        sqlite3_finalize(handle)
    }

    /// How many rows the next run is likely to return: the smaller of the last two runs' counts
    /// (after one run, its count; 0 before). The smaller one, so that a statement whose runs
    /// alternate between many rows and a few (the same SQL, other bound values) expects a few:
    /// a reader that sizes its tables for too many rows pays for tables it does not fill, one
    /// that sizes them for too few only grows them as it would without an estimate.
    package var expectedRowCount: Int { recordedRuns < 2 ? rowCounts.last : min(rowCounts.last, rowCounts.previous) }

    /// Whether a complete run of the statement was recorded (``expectedRowCount`` is then an
    /// estimate; before, it is 0 for want of one).
    package var hasRecordedRuns: Bool { recordedRuns > 0 }

    /// Records the number of rows a complete run returned.
    package func noteRowCount(_ count: Int) {
        rowCounts = (count, rowCounts.last)
        if recordedRuns < 2 { recordedRuns += 1 }
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
                // Invariant: the UTF-8 bytes are valid for this call; SQLite copies them (TRANSIENT).
                _ = sqlite3_bind_text(
                    handle, index, UnsafeRawPointer(base).assumingMemoryBound(to: CChar.self),
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

    /// Binds bytes as a blob (SQLite copies them).
    package func bind(bytes: UnsafeRawBufferPointer, at index: Int32) {
        if let base = bytes.baseAddress {
            _ = sqlite3_bind_blob64(handle, index, base, sqlite3_uint64(bytes.count), coherence_sqlite3_transient())
        } else {
            _ = sqlite3_bind_zeroblob(handle, index, 0)
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

    /// Binds values to parameters 1…n.
    package func bind(_ values: [StoredValue]) {
        for (i, v) in values.enumerated() { bind(v, at: Int32(i + 1)) }
    }

    // MARK: Stepping

    /// Steps once. Returns true when a row is available.
    @inlinable @inline(__always) package func step() throws(SQLiteError) -> Bool {
        let rc = sqlite3_step(handle)
        if rc == SQLITE_ROW { return true }
        if rc == SQLITE_DONE { return false }
        throw stepError(rc)
    }

    /// The error of a step that failed with `rc`; resets the statement.
    @usableFromInline func stepError(_ rc: Int32) -> SQLiteError {
        let error = connection.error(code: rc, sql: sql)
        sqlite3_reset(handle)
        return error
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

    @inlinable @inline(__always) package func int64(_ column: Int32) -> Int64 {
        sqlite3_column_int64(handle, column)
    }

    @inlinable @inline(__always) package func double(_ column: Int32) -> Double {
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

    /// Hands a blob column's bytes to `body` in place, without copying them (empty for NULL).
    /// The bytes are valid only during `body`: SQLite's pointer lasts until the next step.
    package func withBlob<T, E: Error>(_ column: Int32, _ body: (UnsafeRawBufferPointer) throws(E) -> T) throws(E) -> T {
        let p = sqlite3_column_blob(handle, column)
        let n = Int(sqlite3_column_bytes(handle, column))
        return try body(UnsafeRawBufferPointer(start: n > 0 ? p : nil, count: n > 0 && p != nil ? n : 0))
    }

    /// Reads a column of the current row as a ``StoredValue`` with its storage class.
    ///
    /// One `sqlite3_column_value` call, then the value's accessors (each `sqlite3_column_*`
    /// call looks the column up again). The value is read at once: SQLite's pointer is valid
    /// only until the next step, reset or finalize, and is never kept. (It is "unprotected" in
    /// SQLite's terms, which only matters to connections shared between threads; a connection
    /// is used by one thread at a time and opened with `SQLITE_OPEN_NOMUTEX`.)
    @inlinable @inline(__always) package func value(_ column: Int32) -> StoredValue {
        columns.value(column)
    }

    /// A reader of the current row's columns (see ``ColumnReader``).
    @inlinable package var columns: ColumnReader { ColumnReader(self) }
}

extension SQLiteStatement {
    /// Runs the statement and collects every row with `row`.
    package func rows<T>(_ row: (SQLiteStatement) throws -> T) throws -> [T] {
        defer { sqlite3_reset(handle) }
        var result: [T] = []
        while try step() { result.append(try row(self)) }
        return result
    }
}

extension StoredValue {
    /// The value's storage class, for messages: "NULL", "an integer", "a real", "text" or "a blob".
    package var kindName: String {
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
