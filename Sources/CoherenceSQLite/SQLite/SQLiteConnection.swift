import CCoherenceSQLite
import Foundation

/// One SQLite database connection with a prepared-statement cache.
///
/// A connection is not thread-safe: it is owned by one store and used by one thread at a time
/// (the store hands connections out under a lock). Connections are opened with
/// `SQLITE_OPEN_NOMUTEX` because of that, and configured for WAL with `synchronous=NORMAL`
/// (or `FULL`, see ``Synchronous``), a busy timeout and foreign keys.
package final class SQLiteConnection {
    /// When SQLite syncs the file to disk (its `PRAGMA synchronous`).
    package enum Synchronous: String, Sendable {
        /// `NORMAL`: in WAL mode, a commit survives a crash of the process; the last commits
        /// before a power loss may roll back.
        case normal = "NORMAL"
        /// `FULL`: every commit is synced to disk before it returns.
        case full = "FULL"
    }

    /// How to open a database.
    package enum Location: Equatable {
        /// A file on disk.
        case file(String)
        /// A private in-memory database.
        case memory
    }

    package let handle: OpaquePointer
    package let location: Location
    package let isReadOnly: Bool
    /// How long, in milliseconds, a statement waits for another connection's lock.
    let busyTimeout: Int32
    /// Whether the database stores text as UTF-8 (its `PRAGMA encoding`), so a text value's
    /// bytes can be read as they are stored (see ``SQLiteStatement/value(_:)``). Read when the
    /// connection opens, and true only if the database had a schema then: a database's encoding
    /// is fixed once it has one, but an empty one takes the encoding of whoever creates its
    /// first table (another connection may create it as UTF-16). Otherwise text is read through
    /// SQLite's conversion, which is right in every encoding. (A store's readers open once the
    /// store has made its tables, so they read text as stored.)
    package private(set) var textIsUTF8 = false
    private var statementCache: [String: SQLiteStatement] = [:]
    /// The statements most recently returned by ``cachedStatement(_:)``, most recent first (at
    /// most ``recentLimit``), also in `statementCache`. A save asks for the same few statements
    /// each time with the same `String`s (SQL made once and kept), which compare equal at once
    /// (same storage); the dictionary would hash the whole text on every lookup.
    private var recentStatements: [SQLiteStatement] = []
    private static let recentLimit = 8
    // Invariant: retained while installed as SQLite's trace context; released when replaced
    // or when the connection closes (after the trace is removed).
    private var traceBox: Unmanaged<TraceBox>?

    /// The path for error messages.
    package var pathDescription: String {
        switch location {
        case .file(let p): return p
        case .memory: return ":memory:"
        }
    }

    /// Opens (and, unless read-only, creates) a database and configures it.
    ///
    /// With `switchesToWAL` false a file keeps its journal mode until ``switchToWAL()``: opening
    /// then only reads the file (a store decides whether the file is its own before it changes
    /// anything). The other settings are the connection's own and write nothing. `functions`
    /// registers SQL functions and collations before the schema is first read.
    /// - Throws: ``SQLiteError`` when the file cannot be opened or is not a database.
    package init(
        location: Location, readOnly: Bool = false, busyTimeout: Int32 = 5_000,
        switchesToWAL: Bool = true, synchronous: Synchronous = .normal,
        functions: (SQLiteConnection) throws(SQLiteError) -> Void = { _ in }
    ) throws(SQLiteError) {
        var flags = SQLITE_OPEN_NOMUTEX | SQLITE_OPEN_URI
        flags |= readOnly ? SQLITE_OPEN_READONLY : (SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE)
        let path: String
        switch location {
        case .file(let p): path = p
        case .memory: path = ":memory:"
        }
        var db: OpaquePointer?
        let rc = sqlite3_open_v2(path, &db, flags, nil)
        guard rc == SQLITE_OK, let db else {
            let message = db.flatMap { sqlite3_errmsg($0) }.map { String(cString: $0) } ?? String(cString: sqlite3_errstr(rc))
            let extended = db.map { sqlite3_extended_errcode($0) } ?? rc
            if let db { sqlite3_close_v2(db) }
            throw SQLiteError(extendedResultCode: extended, message: message, sql: nil, path: path)
        }
        self.handle = db
        self.location = location
        self.isReadOnly = readOnly
        self.busyTimeout = busyTimeout
        sqlite3_extended_result_codes(db, 1)
        sqlite3_busy_timeout(db, busyTimeout)
        do {
            var enabled: Int32 = 0
            _ = coherence_sqlite3_db_config_int(db, SQLITE_DBCONFIG_ENABLE_FKEY, 1, &enabled)
            _ = coherence_sqlite3_db_config_int(db, SQLITE_DBCONFIG_DQS_DML, 0, &enabled)
            _ = coherence_sqlite3_db_config_int(db, SQLITE_DBCONFIG_DQS_DDL, 0, &enabled)
            try functions(self)
            // Touch the schema: this is where a non-database file is detected.
            try execute("PRAGMA schema_version")
            if try hasSchema() { textIsUTF8 = try readEncoding() == "UTF-8" }
            if switchesToWAL { try switchToWAL() }
            try execute("PRAGMA synchronous=\(synchronous.rawValue)")
            try execute("PRAGMA foreign_keys=ON")
        } catch {
            recentStatements.removeAll()
            statementCache.removeAll()
            sqlite3_close_v2(db)
            throw error
        }
    }

    /// Puts a writable database file in WAL mode, which is recorded in the file (header bytes
    /// 18 and 19 become 2). Nothing for a read-only connection or an in-memory database.
    ///
    /// Two connections switching the same file at once can each hold the shared lock the other
    /// needs gone: SQLite answers one of them `SQLITE_BUSY` at once rather than wait (its busy
    /// handler would wait forever). That one tries again, with pauses from 20 µs doubling up to
    /// 10 ms, for the connection's busy timeout at most.
    package func switchToWAL() throws(SQLiteError) {
        guard !isReadOnly, case .file = location else { return }
        var pause: UInt32 = 20
        var waited: UInt32 = 0
        while true {
            do throws(SQLiteError) {
                try execute("PRAGMA journal_mode=WAL")
                return
            } catch  where error.resultCode == SQLiteError.busy && waited < UInt32(max(busyTimeout, 0)) * 1_000 {
                usleep(pause)
                waited += pause
                pause = min(pause * 2, 10_000)
            }
        }
    }

    /// Makes closing leave the write-ahead log as it is: by default the last connection to
    /// close checkpoints the log into the database file (and removes it).
    package func leaveLogOnClose() {
        var set: Int32 = 0
        _ = coherence_sqlite3_db_config_int(handle, SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE, 1, &set)
    }

    /// Whether the database has a schema (at least one table, index, view or trigger). Its
    /// encoding is fixed from then on: SQLite writes it into the header with the first table.
    /// Before, another connection may still create the database in another encoding, even once
    /// its first page is written (as switching to WAL does) or its schema version is above 0
    /// (as restoring an empty database over it with the backup API leaves it).
    private func hasSchema() throws(SQLiteError) -> Bool {
        let sql = "SELECT EXISTS (SELECT 1 FROM sqlite_master)"
        var st: OpaquePointer?
        let rc = sqlite3_prepare_v2(handle, sql, -1, &st, nil)
        guard rc == SQLITE_OK, let st else { throw error(code: rc, sql: sql) }
        defer { sqlite3_finalize(st) }
        return sqlite3_step(st) == SQLITE_ROW && sqlite3_column_int64(st, 0) != 0
    }

    /// The database's text encoding: "UTF-8", "UTF-16le" or "UTF-16be".
    private func readEncoding() throws(SQLiteError) -> String {
        var st: OpaquePointer?
        let rc = sqlite3_prepare_v2(handle, "PRAGMA encoding", -1, &st, nil)
        guard rc == SQLITE_OK, let st else { throw error(code: rc, sql: "PRAGMA encoding") }
        defer { sqlite3_finalize(st) }
        guard sqlite3_step(st) == SQLITE_ROW, let text = sqlite3_column_text(st, 0) else { return "" }
        return String(cString: text)
    }

    deinit {
        recentStatements.removeAll()
        statementCache.removeAll()
        sqlite3_close_v2(handle)
        traceBox?.release()
    }

    /// Makes an error from the connection's current state.
    package func error(code: Int32, sql: String?) -> SQLiteError {
        let extended = sqlite3_extended_errcode(handle)
        let message = sqlite3_errmsg(handle).map { String(cString: $0) }
        // sqlite3_extended_errcode reflects the last failing API call; fall back to `code` when it
        // disagrees with the primary code we were given.
        let ext = (extended & 0xFF) == (code & 0xFF) ? extended : code
        return SQLiteError(extendedResultCode: ext, message: message, sql: sql, path: pathDescription)
    }

    // MARK: Statements

    /// Runs one or more SQL statements without bound values.
    package func execute(_ sql: String) throws(SQLiteError) {
        var errmsg: UnsafeMutablePointer<CChar>?
        let rc = sqlite3_exec(handle, sql, nil, nil, &errmsg)
        if rc != SQLITE_OK {
            let message = errmsg.map { String(cString: $0) }
            sqlite3_free(errmsg)
            throw SQLiteError(extendedResultCode: sqlite3_extended_errcode(handle), message: message, sql: sql, path: pathDescription)
        }
    }

    /// Prepares a statement that is not cached.
    package func prepare(_ sql: String) throws(SQLiteError) -> SQLiteStatement {
        try SQLiteStatement(connection: self, sql: sql)
    }

    /// Returns a cached prepared statement for `sql`, preparing it on first use. The statement
    /// is reset, ready for new bindings.
    ///
    /// - Complexity: O(1) amortized: a few comparisons with the recent statements' SQL (equal
    ///   at once when it is the same string), else one dictionary lookup on the SQL text.
    package func cachedStatement(_ sql: String) throws(SQLiteError) -> SQLiteStatement {
        // (Lengths first: `==` on two different strings compares their bytes before their lengths.)
        let length = sql.utf8.count
        for i in recentStatements.indices where recentStatements[i].sqlLength == length && recentStatements[i].sql == sql {
            let s = recentStatements[i]
            if i > 0 { recentStatements.swapAt(i, i - 1) }  // the ones asked for most move forward
            return s
        }
        let s: SQLiteStatement
        if let cached = statementCache[sql] {
            s = cached
        } else {
            s = try SQLiteStatement(connection: self, sql: sql)
            statementCache[sql] = s
        }
        if recentStatements.count < Self.recentLimit {
            recentStatements.append(s)
        } else {
            recentStatements[Self.recentLimit - 1] = s
        }
        return s
    }

    /// The number of statements in the cache (for tests and diagnostics).
    package var cachedStatementCount: Int { statementCache.count }

    /// Drops every cached statement (needed before schema changes invalidate them).
    package func clearStatementCache() {
        recentStatements.removeAll()
        statementCache.removeAll()
    }

    /// The rowid of the last insert.
    package var lastInsertRowID: Int64 { sqlite3_last_insert_rowid(handle) }

    /// The number of rows changed by the last statement.
    package var changes: Int { Int(sqlite3_changes(handle)) }

    /// Whether a transaction is open.
    package var isInTransaction: Bool { sqlite3_get_autocommit(handle) == 0 }

    /// Whether the database file was renamed, moved or deleted since this connection opened it
    /// — another file put at its path, say (`SQLITE_FCNTL_HAS_MOVED`: one `stat` of the path);
    /// false for a database without a file.
    package var fileHasMoved: Bool {
        var moved: Int32 = 0
        guard sqlite3_file_control(handle, "main", SQLITE_FCNTL_HAS_MOVED, &moved) == SQLITE_OK else { return false }
        return moved != 0
    }

    /// Throws what `COMMIT` would throw when the open transaction breaks a deferred foreign
    /// key (one another program added with `DEFERRABLE INITIALLY DEFERRED`, say), so that a
    /// write spanning several files can be refused before any of them commits.
    /// - Throws: ``SQLiteError`` `SQLITE_CONSTRAINT_FOREIGNKEY`.
    package func checkDeferredForeignKeys() throws(SQLiteError) {
        var current: Int32 = 0
        var highest: Int32 = 0
        guard sqlite3_db_status(handle, SQLITE_DBSTATUS_DEFERRED_FKS, &current, &highest, 0) == SQLITE_OK, current > 0 else { return }
        throw SQLiteError(
            extendedResultCode: SQLiteError.constraintForeignKey,
            message: "FOREIGN KEY constraint failed (deferred, checked before COMMIT)",
            sql: "COMMIT", path: pathDescription)
    }

    // MARK: Transactions

    /// Runs `body` in a write transaction (`BEGIN IMMEDIATE`), committing when it returns and
    /// rolling back when it throws.
    package func writeTransaction<T>(_ body: () throws -> T) throws -> T {
        try cachedStatement("BEGIN IMMEDIATE").execute()
        do {
            let result = try body()
            try cachedStatement("COMMIT").execute()
            return result
        } catch {
            if isInTransaction { try? cachedStatement("ROLLBACK").execute() }
            throw error
        }
    }

    /// Runs `body` in a read transaction, so that every query inside it sees one snapshot.
    package func readTransaction<T>(_ body: () throws -> T) throws -> T {
        if isInTransaction { return try body() }
        try cachedStatement("BEGIN DEFERRED").execute()
        defer { if isInTransaction { try? cachedStatement("COMMIT").execute() } }
        return try body()
    }

    // MARK: Tracing

    /// Called with the SQL of each statement as it starts (without bound values). For tests and
    /// diagnostics; costs nothing when nil.
    package var traceHandler: ((String) -> Void)? {
        get { traceBox?.takeUnretainedValue().handler }
        set {
            traceBox?.release()
            traceBox = nil
            guard let newValue else {
                sqlite3_trace_v2(handle, 0, nil, nil)
                return
            }
            let box = Unmanaged.passRetained(TraceBox(handler: newValue))
            traceBox = box
            sqlite3_trace_v2(
                handle, UInt32(SQLITE_TRACE_STMT),
                { _, context, statement, _ in
                    guard let context, let statement else { return 0 }
                    let box = Unmanaged<TraceBox>.fromOpaque(context).takeUnretainedValue()
                    if let sql = sqlite3_sql(OpaquePointer(statement)) {
                        box.handler(String(cString: sql))
                    }
                    return 0
                }, box.toOpaque())
        }
    }

    private final class TraceBox {
        let handler: (String) -> Void
        init(handler: @escaping (String) -> Void) { self.handler = handler }
    }
}

@available(*, unavailable)
extension SQLiteConnection: Sendable {}
