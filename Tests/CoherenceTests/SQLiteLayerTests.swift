import CCoherenceSQLite
import Foundation
import Testing
@testable import Coherence
@testable import CoherenceBase
@testable import CoherenceContext
@testable import CoherenceSQLite
@testable import CoherenceStore

@Suite("SQLite layer")
struct SQLiteLayerTests {
    @Test func opensFileInWALWithForeignKeys() throws {
        let dir = try TemporaryDirectory()
        let c = try SQLiteConnection(location: .file(dir.file("a.sqlite").path))
        let mode = try c.prepare("PRAGMA journal_mode").rows { $0.string(0) }
        #expect(mode == ["wal"])
        let sync = try c.prepare("PRAGMA synchronous").rows { $0.int64(0) }
        #expect(sync == [1])  // NORMAL
        let fk = try c.prepare("PRAGMA foreign_keys").rows { $0.int64(0) }
        #expect(fk == [1])
    }

    @Test func roundTripsEveryTypedValue() throws {
        let c = try SQLiteConnection(location: .memory)
        try c.execute("CREATE TABLE t (v)")
        let insert = try c.prepare("INSERT INTO t (v) VALUES (?)")
        let select = try c.prepare("SELECT v FROM t")
        func roundTrip<T: PersistentValue & Equatable>(_ value: T) throws -> T {
            try c.execute("DELETE FROM t")
            insert.bind(value, at: 1)
            try insert.execute()
            defer { select.reset() }
            #expect(try select.step())
            return try select.decode(T.self, at: 0)
        }
        #expect(try roundTrip(Int.max) == Int.max)
        #expect(try roundTrip(Int.min) == Int.min)
        #expect(try roundTrip(Int16.min) == Int16.min)
        #expect(try roundTrip(Int32.max) == Int32.max)
        #expect(try roundTrip(Int64.min) == Int64.min)
        #expect(try roundTrip(Double.pi) == Double.pi)
        #expect(try roundTrip(-Double.greatestFiniteMagnitude) == -Double.greatestFiniteMagnitude)
        #expect(try roundTrip(Float(1.5e-30)) == Float(1.5e-30))
        #expect(try roundTrip(true) == true)
        #expect(try roundTrip("héllo wörld 🌍 \u{0}nul") == "héllo wörld 🌍 \u{0}nul")
        #expect(try roundTrip("") == "")
        #expect(try roundTrip(Data([0, 1, 2, 255])) == Data([0, 1, 2, 255]))
        let date = Date(timeIntervalSinceReferenceDate: 123_456_789.123_456)
        #expect(try roundTrip(date) == date)
        let uuid = UUID()
        #expect(try roundTrip(uuid) == uuid)
        let url = try #require(URL(string: "https://example.com/a%20b?q=1#x"))
        #expect(try roundTrip(url) == url)
        let decimal = try #require(Decimal(string: "12345678901234567890.123456789012345678"))
        #expect(try roundTrip(decimal) == decimal)
        let small = try #require(Decimal(string: "-0.000000000000000000000000000001"))
        #expect(try roundTrip(small) == small)
        #expect(try roundTrip(Optional<Int>.none) == nil)
    }

    @Test func decodingTheWrongTypeThrows() throws {
        let c = try SQLiteConnection(location: .memory)
        let st = try c.prepare("SELECT 'text'")
        #expect(try st.step())
        #expect(throws: SQLiteError.self) { try st.decode(Int.self, at: 0) }
    }

    @Test func statementCacheReusesStatements() throws {
        let c = try SQLiteConnection(location: .memory)
        let a = try c.cachedStatement("SELECT 1")
        let b = try c.cachedStatement("SELECT 1")
        #expect(a === b)
        #expect(c.cachedStatementCount >= 1)
    }

    @Test func writeTransactionRollsBackOnError() throws {
        let c = try SQLiteConnection(location: .memory)
        try c.execute("CREATE TABLE t (v INTEGER UNIQUE)")
        struct Boom: Error {}
        #expect(throws: Boom.self) {
            try c.writeTransaction {
                try c.execute("INSERT INTO t VALUES (1)")
                throw Boom()
            }
        }
        let count = try c.prepare("SELECT count(*) FROM t").rows { $0.int64(0) }
        #expect(count == [0])
        #expect(!c.isInTransaction)
        var traced: [String] = []
        c.traceHandler = { traced.append($0) }
        try c.writeTransaction { try c.execute("INSERT INTO t VALUES (2)") }
        #expect(traced.first == "BEGIN IMMEDIATE")
        #expect(traced.last == "COMMIT")
    }

    @Test func errorsCarryCodesAndSQLButNotValues() throws {
        let c = try SQLiteConnection(location: .memory)
        try c.execute("CREATE TABLE t (v TEXT UNIQUE)")
        let insert = try c.prepare("INSERT INTO t (v) VALUES (?)")
        insert.bind("secret-value", at: 1)
        try insert.execute()
        insert.bind("secret-value", at: 1)
        do {
            try insert.execute()
            Issue.record("expected a constraint error")
        } catch {
            #expect(error.resultCode == SQLiteError.constraint)
            #expect(error.isUniqueConstraintViolation)
            #expect(error.sql == "INSERT INTO t (v) VALUES (?)")
            #expect(!error.description.contains("secret-value"))
            #expect(error.description.contains("INSERT INTO t"))
        }
    }

    /// Text is read as stored in a UTF-8 database (no copy to add a terminating zero), and
    /// converted in a UTF-16 one.
    @Test(arguments: ["UTF-8", "UTF-16le", "UTF-16be"])
    func readsTextInTheDatabasesEncoding(_ encoding: String) throws {
        let dir = try TemporaryDirectory()
        let path = dir.file("t.sqlite").path
        var raw: OpaquePointer?
        #expect(sqlite3_open(path, &raw) == SQLITE_OK)
        #expect(sqlite3_exec(raw, "PRAGMA encoding = '\(encoding)'; CREATE TABLE t (v)", nil, nil, nil) == SQLITE_OK)
        sqlite3_close(raw)

        let c = try SQLiteConnection(location: .file(path))
        #expect(c.textIsUTF8 == (encoding == "UTF-8"))
        let texts = ["", "a", "héllo wörld 🌍", "with \u{0} a zero", String(repeating: "long text ", count: 40)]
        let insert = try c.prepare("INSERT INTO t (v) VALUES (?)")
        for t in texts {
            insert.bind(t, at: 1)
            try insert.execute()
        }
        let values = try c.prepare("SELECT v FROM t ORDER BY rowid").rows { $0.value(0) }
        #expect(values == texts.map { StoredValue.text($0) })
    }

    /// Another connection creates the database at `path` as UTF-16 with a table `t` holding
    /// "héllo"; `c`, opened before, reads it right.
    private func expectUTF16TableReadsRight(at path: String, through c: SQLiteConnection) throws {
        var raw: OpaquePointer?
        #expect(sqlite3_open(path, &raw) == SQLITE_OK)
        #expect(
            sqlite3_exec(
                raw, "PRAGMA encoding = 'UTF-16le'; CREATE TABLE t (v); INSERT INTO t VALUES ('héllo')",
                nil, nil, nil) == SQLITE_OK)
        sqlite3_close(raw)
        #expect(try c.prepare("SELECT v FROM t").rows { $0.value(0) } == [.text("héllo")])
    }

    /// A connection opened on an empty file cannot know the encoding: another connection may
    /// create the database as UTF-16. It reads text through SQLite's conversion then.
    @Test func anEmptyDatabaseCreatedAsUTF16ElsewhereReadsRight() throws {
        let dir = try TemporaryDirectory()
        let path = dir.file("t.sqlite").path
        let c = try SQLiteConnection(location: .file(path))
        #expect(!c.textIsUTF8)
        try expectUTF16TableReadsRight(at: path, through: c)
        #expect(try c.prepare("PRAGMA encoding").rows { $0.string(0) } == ["UTF-16le"])
        // A connection opened once the database has content reads it as stored.
        let utf8 = try SQLiteConnection(location: .file(dir.file("u.sqlite").path))
        try utf8.execute("CREATE TABLE t (v)")
        #expect(try SQLiteConnection(location: .file(dir.file("u.sqlite").path)).textIsUTF8)
    }

    /// An empty database whose schema version is above 0 (an empty database restored over it
    /// with the backup API) has no fixed encoding yet either.
    @Test func anEmptyDatabaseWithASchemaVersionCreatedAsUTF16ElsewhereReadsRight() throws {
        let dir = try TemporaryDirectory()
        let path = dir.file("t.sqlite").path
        try SQLiteConnection(location: .file(path)).execute("CREATE TABLE t (v)")
        var source: OpaquePointer?, destination: OpaquePointer?
        #expect(sqlite3_open(":memory:", &source) == SQLITE_OK)
        #expect(sqlite3_open(path, &destination) == SQLITE_OK)
        let backup = sqlite3_backup_init(destination, "main", source, "main")
        #expect(sqlite3_backup_step(backup, -1) == SQLITE_DONE)
        sqlite3_backup_finish(backup)
        sqlite3_close(source)
        sqlite3_close(destination)
        let c = try SQLiteConnection(location: .file(path))
        #expect(try c.prepare("PRAGMA schema_version").rows { $0.int64(0) }.allSatisfy { $0 > 0 })
        #expect(!c.textIsUTF8)
        try expectUTF16TableReadsRight(at: path, through: c)
    }

    /// Text that is not a stored column (expressions, bound values, function results) reads
    /// right too, and NULL stays apart from empty text.
    @Test func computedTextReadsAsStored() throws {
        let dir = try TemporaryDirectory()
        let path = dir.file("t.sqlite").path
        try SQLiteConnection(location: .file(path)).execute("CREATE TABLE t (v TEXT); INSERT INTO t VALUES ('Héllo'), (''), (NULL)")
        let c = try SQLiteConnection(location: .file(path), functions: SQLFunctions.register)
        #expect(c.textIsUTF8)
        let st = try c.prepare(
            "SELECT v, v || 'x', ?, coherence_fold(v), CAST(x'' AS TEXT), upper(v), CAST(x'00410042' AS TEXT) FROM t ORDER BY rowid")
        st.bind("bö", at: 1)
        let rows = try st.rows { s in (0..<7).map { s.value(Int32($0)) } }
        #expect(rows.count == 3)
        #expect(
            rows.first == [.text("Héllo"), .text("Héllox"), .text("bö"), .text("hello"), .text(""), .text("HéLLO"), .text("\u{0}A\u{0}B")])
        #expect(rows.dropFirst().first == [.text(""), .text("x"), .text("bö"), .text(""), .text(""), .text(""), .text("\u{0}A\u{0}B")])
        #expect(rows.last.map { [$0[0], $0[1], $0[3]] } == [.null, .null, .null])
    }

    /// Every value of every row, read one column at a time as each row is stepped to.
    private func allRows(_ st: SQLiteStatement) throws -> [[StoredValue]] {
        var rows: [[StoredValue]] = []
        defer { st.reset() }
        while try st.step() { rows.append((0..<st.columnCount).map { st.value($0) }) }
        return rows
    }

    /// A compound SELECT sorted as a whole merges its arms' rows (each arm returns them in
    /// registers of its own): every row reads its own values.
    @Test func aCompoundSelectReadsEachRowsValues() throws {
        let c = try SQLiteConnection(location: .memory)
        try c.execute(
            """
            CREATE TABLE a (x INTEGER, y TEXT, z REAL); CREATE TABLE b (p BLOB, q REAL, r TEXT, s);
            INSERT INTO a VALUES (1, 'one', 1.5), (2, 'two', NULL), (3, 'three', 3.5);
            INSERT INTO b VALUES (x'0102', 0, 'zero', x'ff'), (NULL, 2.5, NULL, 'text')
            """)
        let st = try c.prepare("SELECT x, y, z FROM a UNION ALL SELECT q, r, s FROM b ORDER BY 1")
        let first = try allRows(st)
        #expect(
            first == [
                [.real(0), .text("zero"), .blob(Data([0xff]))],
                [.integer(1), .text("one"), .real(1.5)],
                [.integer(2), .text("two"), .null],
                [.real(2.5), .null, .text("text")],
                [.integer(3), .text("three"), .real(3.5)]
            ])
        // A second run reads the same rows.
        #expect(try allRows(st) == first)
    }

    /// A statement SQLite prepares again (the schema changed between two runs) reads right.
    @Test func aStatementPreparedAgainReadsRight() throws {
        let dir = try TemporaryDirectory()
        let path = dir.file("s.sqlite").path
        let c = try SQLiteConnection(location: .file(path))
        try c.execute("CREATE TABLE t (k INTEGER PRIMARY KEY, v TEXT, w REAL); INSERT INTO t VALUES (1, 'a', 0.5), (2, 'b', 1.5)")
        let st = try c.prepare("SELECT k, v, w FROM t ORDER BY k")
        #expect(try allRows(st) == [[.integer(1), .text("a"), .real(0.5)], [.integer(2), .text("b"), .real(1.5)]])
        // Another connection changes the schema: the statement's next step prepares it again.
        let other = try SQLiteConnection(location: .file(path))
        try other.execute("CREATE TABLE u (z); CREATE INDEX tw ON t (w); UPDATE t SET v = 'bb' WHERE k = 2")
        #expect(try allRows(st) == [[.integer(1), .text("a"), .real(0.5)], [.integer(2), .text("bb"), .real(1.5)]])
    }

    /// A statement prepared again with another number of columns (a view redefined under
    /// `SELECT *`) keeps the column count it was prepared with: a column the new program does
    /// not have reads as NULL.
    @Test(
        arguments: zip(
            ["SELECT a, b FROM t", "SELECT a, abs(b) FROM t", "SELECT a, b + c FROM t", "SELECT a, b, c, a + c FROM t"],
            [[10, 20, nil], [10, 20, nil], [10, 50, nil], [10, 20, 30]] as [[Int64?]]))
    func aStatementPreparedAgainWithOtherColumnsReadsRight(_ view: String, _ expected: [Int64?]) throws {
        let dir = try TemporaryDirectory()
        let path = dir.file("v.sqlite").path
        let c = try SQLiteConnection(location: .file(path))
        let other = try SQLiteConnection(location: .file(path))
        try other.execute("CREATE TABLE t (a, b, c); INSERT INTO t VALUES (1, 2, 3); CREATE VIEW v AS SELECT a, b, c FROM t")
        let st = try c.prepare("SELECT * FROM v")
        #expect(try allRows(st) == [[.integer(1), .integer(2), .integer(3)]])
        // Prepared again with no rows (the old program is freed), then again with a row.
        try other.execute("DELETE FROM t; DROP VIEW v; CREATE VIEW v AS \(view)")
        #expect(try allRows(st).isEmpty)
        try other.execute("CREATE TABLE u (x); INSERT INTO t VALUES (10, 20, 30)")
        #expect(try allRows(st) == [expected.map { $0.map(StoredValue.integer) ?? .null }])
    }

    @Test func decimalCollationComparesNumerically() throws {
        let c = try SQLiteConnection(location: .memory, functions: SQLFunctions.register)
        try c.execute("CREATE TABLE t (d TEXT COLLATE COHERENCE_DECIMAL)")
        for v in ["10", "9.5", "-1", "100.25", "2"] { try c.execute("INSERT INTO t VALUES ('\(v)')") }
        let sorted = try c.prepare("SELECT d FROM t ORDER BY d").rows { $0.string(0) }
        #expect(sorted == ["-1", "2", "9.5", "10", "100.25"])
        let bigger = try c.prepare("SELECT d FROM t WHERE d > '9.75' ORDER BY d").rows { $0.string(0) }
        #expect(bigger == ["10", "100.25"])
    }
}
