import BenchmarkSupport
import Foundation
import GRDBSQLite

/// Hand-written SQLite C: one prepared statement reused, one transaction, WAL, synchronous=NORMAL.
final class RawDB {
    let db: OpaquePointer

    init(_ url: URL) throws {
        var handle: OpaquePointer?
        guard sqlite3_open_v2(url.path, &handle, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX, nil) == SQLITE_OK,
            let handle
        else { throw RawError.open }
        db = handle
        try exec("PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;")
        try exec(
            """
            CREATE TABLE IF NOT EXISTS town (id INTEGER PRIMARY KEY, name TEXT NOT NULL);
            CREATE TABLE IF NOT EXISTS person (id INTEGER PRIMARY KEY, name TEXT NOT NULL, email TEXT NOT NULL, age INTEGER NOT NULL,
              score REAL NOT NULL, createdAt REAL NOT NULL, townId INTEGER);
            CREATE INDEX IF NOT EXISTS person_age ON person(age);
            CREATE INDEX IF NOT EXISTS person_town ON person(townId);
            """)
    }

    deinit { sqlite3_close_v2(db) }

    enum RawError: Error { case open, sql(String) }

    func exec(_ sql: String) throws {
        guard sqlite3_exec(db, sql, nil, nil, nil) == SQLITE_OK else { throw RawError.sql(String(cString: sqlite3_errmsg(db))) }
    }

    func prepare(_ sql: String) throws -> OpaquePointer {
        var st: OpaquePointer?
        guard sqlite3_prepare_v2(db, sql, -1, &st, nil) == SQLITE_OK, let st else {
            throw RawError.sql(String(cString: sqlite3_errmsg(db)))
        }
        return st
    }
}

let transient = unsafeBitCast(-1, to: sqlite3_destructor_type.self)

@inline(__always) func bindText(_ st: OpaquePointer, _ i: Int32, _ s: String) {
    var s = s
    s.withUTF8 { b in
        _ = sqlite3_bind_text(st, i, UnsafeRawPointer(b.baseAddress!).assumingMemoryBound(to: CChar.self), Int32(b.count), transient)
    }
}

@inline(__always) func columnText(_ st: OpaquePointer, _ i: Int32) -> String {
    guard let p = sqlite3_column_text(st, i) else { return "" }
    return String(decoding: UnsafeBufferPointer(start: p, count: Int(sqlite3_column_bytes(st, i))), as: UTF8.self)
}

/// Inserts `n` people (ids offset..<offset+n) in one transaction.
func rawInsert(_ db: RawDB, n: Int, offset: Int = 0, towns: Int = 0) throws {
    try db.exec("BEGIN")
    if towns > 0 {
        let t = try db.prepare("INSERT INTO town (id, name) VALUES (?, ?)")
        for k in 0..<towns {
            sqlite3_bind_int64(t, 1, Int64(k + 1))
            bindText(t, 2, "Town \(k)")
            sqlite3_step(t)
            sqlite3_reset(t)
        }
        sqlite3_finalize(t)
    }
    let st = try db.prepare("INSERT INTO person (id, name, email, age, score, createdAt, townId) VALUES (?, ?, ?, ?, ?, ?, ?)")
    for i in offset..<(offset + n) {
        sqlite3_bind_int64(st, 1, Int64(i))
        bindText(st, 2, Data_.name(i, n))
        bindText(st, 3, Data_.email(i))
        sqlite3_bind_int64(st, 4, Int64(Data_.age(i)))
        sqlite3_bind_double(st, 5, Data_.score(i))
        sqlite3_bind_double(st, 6, Data_.created(i).timeIntervalSinceReferenceDate)
        if towns > 0 { sqlite3_bind_int64(st, 7, Int64(i % towns + 1)) } else { sqlite3_bind_null(st, 7) }
        guard sqlite3_step(st) == SQLITE_DONE else { throw RawDB.RawError.sql(String(cString: sqlite3_errmsg(db.db))) }
        sqlite3_reset(st)
    }
    sqlite3_finalize(st)
    try db.exec("COMMIT")
}
