import CCoherenceSQLite

/// An error reported by SQLite.
///
/// Carries the primary and extended result codes, SQLite's message and the SQL that failed.
/// Bound values are never part of the error, so logging an error cannot leak user data.
///
/// Coherence's API never throws it directly: it throws a ``CoherenceError`` naming the store
/// and the SQL, with the `SQLiteError` in ``CoherenceError/underlyingErrors`` — code
/// ``CoherenceError/Code/storeOpenFailed`` when a store cannot be attached,
/// ``CoherenceError/Code/storeReadFailed`` for a fetch, count or fault, and
/// ``CoherenceError/Code/storeWriteFailed`` for a save (which then wrote nothing).
///
/// ```swift
/// do {
///     try context.save()   // throws CoherenceError
/// } catch let error where error.code == .storeWriteFailed {
///     let sqlite = error.underlyingErrors.lazy.compactMap { $0 as? SQLiteError }.first
///     if sqlite?.resultCode == SQLiteError.busy { retryLater() }   // another process held the write lock
///     else { print(error.sql ?? "", sqlite?.message ?? "") }
/// }
/// ```
public struct SQLiteError: Error, CustomStringConvertible, Sendable, Equatable {
    /// The primary result code (`SQLITE_CONSTRAINT`, `SQLITE_BUSY`, …).
    public var resultCode: Int32 { extendedResultCode & 0xFF }
    /// The extended result code (`SQLITE_CONSTRAINT_UNIQUE`, …).
    public let extendedResultCode: Int32
    /// SQLite's message, if any.
    public let message: String?
    /// The SQL statement that failed, if any (never with bound values).
    public let sql: String?
    /// The database file, if known.
    public let path: String?

    /// Creates an error.
    public init(extendedResultCode: Int32, message: String? = nil, sql: String? = nil, path: String? = nil) {
        self.extendedResultCode = extendedResultCode
        self.message = message
        self.sql = sql
        self.path = path
    }

    /// The result codes, SQLite's message, and the SQL and database file when known.
    public var description: String {
        var s = "SQLite error \(resultCode)"
        if extendedResultCode != resultCode { s += " (extended \(extendedResultCode))" }
        if let message { s += ": \(message)" }
        if let sql { s += " — while executing `\(sql)`" }
        if let path { s += " — database \(path)" }
        return s
    }

    /// `SQLITE_BUSY`: the database is locked by another connection.
    public static let busy: Int32 = SQLITE_BUSY
    /// `SQLITE_CONSTRAINT`: a constraint failed.
    public static let constraint: Int32 = SQLITE_CONSTRAINT
    /// `SQLITE_NOTADB`: the file is not a database.
    public static let notADatabase: Int32 = SQLITE_NOTADB
    /// `SQLITE_CANTOPEN`: the file could not be opened.
    public static let cannotOpen: Int32 = SQLITE_CANTOPEN
    /// `SQLITE_READONLY`: an attempt to write a read-only database.
    public static let readOnly: Int32 = SQLITE_READONLY
    /// `SQLITE_CORRUPT`: the database is malformed.
    public static let corrupt: Int32 = SQLITE_CORRUPT

    /// `SQLITE_CONSTRAINT_UNIQUE`.
    public static let constraintUnique: Int32 = SQLITE_CONSTRAINT | (8 << 8)
    /// `SQLITE_CONSTRAINT_PRIMARYKEY`.
    public static let constraintPrimaryKey: Int32 = SQLITE_CONSTRAINT | (6 << 8)
    /// `SQLITE_CONSTRAINT_FOREIGNKEY`.
    package static let constraintForeignKey: Int32 = SQLITE_CONSTRAINT | (3 << 8)

    /// Whether this is a UNIQUE or PRIMARY KEY constraint violation.
    public var isUniqueConstraintViolation: Bool {
        extendedResultCode == SQLiteError.constraintUnique || extendedResultCode == SQLiteError.constraintPrimaryKey
    }
}
