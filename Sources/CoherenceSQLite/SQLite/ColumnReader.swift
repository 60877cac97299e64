import CCoherenceSQLite
import Foundation

/// Reads the columns of a statement's current row, as ``SQLiteStatement/value(_:)``: the
/// statement's handle without the statement, so that a closure that reads values row after
/// row (a lazy map filling a row's value array) captures no reference to count.
///
/// - Invariant: used only while its statement exists (the handle is the statement's): made
///   from a statement the caller keeps and uses after the reads (`SQLiteStore`'s fetch loop
///   steps and resets it). Debug builds check it at every read.
@usableFromInline package struct ColumnReader {
    @usableFromInline let handle: OpaquePointer
    @usableFromInline let textIsUTF8: Bool
    #if DEBUG
    /// Debug builds: the statement, to check at each read that it still exists.
    @usableFromInline weak var statement: SQLiteStatement?
    #endif

    @inlinable init(_ statement: SQLiteStatement) {
        self.handle = statement.handle
        self.textIsUTF8 = statement.textIsUTF8
        #if DEBUG
        self.statement = statement
        #endif
    }

    /// The value of result column `column` of the current row (see ``SQLiteStatement/value(_:)``).
    @inlinable @inline(__always) package func value(_ column: Int32) -> StoredValue {
        #if DEBUG
        assert(statement != nil, "A column reader outlived its statement.")
        #endif
        guard let v = sqlite3_column_value(handle, column) else { return .null }
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
}
