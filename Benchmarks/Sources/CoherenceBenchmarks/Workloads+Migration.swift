import BenchmarkSupport
import Coherence
import Foundation
import GRDBSQLite

/// Migrations of a store of `n` items: M1 adds an attribute (Coherence's inferred migration
/// against raw `ALTER TABLE … ADD COLUMN`), M2 renames one (a rebuild, against raw
/// `INSERT INTO new SELECT … FROM old` and the swap). Coherence opens the store, migrates it and
/// closes it; so does "raw" by hand; "baseline" is the raw change alone, on an open connection.
extension Workloads {
    static func itemModel(_ properties: [PropertyDescription]) throws -> ManagedObjectModel {
        try ManagedObjectModel(entities: [EntityDescription(name: "Item", properties: properties)])
    }

    static func itemsV1() throws -> ManagedObjectModel {
        try itemModel([
            AttributeDescription(name: "title", type: .string, defaultValue: ""),
            AttributeDescription(name: "rank", type: .integer64, defaultValue: 0),
            AttributeDescription(name: "weight", type: .double, defaultValue: 0.0)
        ])
    }

    /// A store of `n` items at the first version (filled with SQL, untimed).
    static func makeItemStore(_ url: URL, n: Int) throws {
        let c = PersistentStoreCoordinator(managedObjectModel: try itemsV1())
        let store = try c.addPersistentStore(type: .sqlite, at: url)
        try c.remove(store)
        let db = try RawDB(url)
        try db.exec(
            """
            BEGIN;
            WITH RECURSIVE k(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM k WHERE i < \(n))
            INSERT INTO "Item" (Z_PK, Z_ENT, Z_OPT, "title", "rank", "weight") SELECT i, 1, 1, 'item ' || i, i, i * 0.5 FROM k;
            UPDATE Z_PRIMARYKEY SET Z_MAX = \(n);
            COMMIT;
            """)
    }

    static func migration(
        _ name: String, _ title: String, _ o: Options, next: ManagedObjectModel, raw: String
    ) throws -> WorkloadResult {
        let n = o.n(1_000_000)
        return try interleave(
            name, "\(title) (\(n) rows)", reps: o.repetitions,
            [
                (
                    "coherence",
                    {
                        try withTemporaryDirectory { dir in
                            let url = dir.appendingPathComponent("m.sqlite")
                            try makeItemStore(url, n: n)
                            return try measure {
                                let c = PersistentStoreCoordinator(managedObjectModel: next)
                                try c.remove(try c.addPersistentStore(type: .sqlite, at: url))
                            }
                        }
                    }
                ),
                (
                    // What adding the store does to the file, by hand: open it (WAL,
                    // synchronous=NORMAL), change it in one transaction, close it (which
                    // checkpoints the log and syncs the file).
                    "raw",
                    {
                        try withTemporaryDirectory { dir in
                            let url = dir.appendingPathComponent("m.sqlite")
                            try makeItemStore(url, n: n)
                            return try measure { try openChangeClose(url, "BEGIN; \(raw) COMMIT;") }
                        }
                    }
                ),
                (
                    // The change alone, on a connection already open.
                    "baseline",
                    {
                        try withTemporaryDirectory { dir in
                            let url = dir.appendingPathComponent("m.sqlite")
                            try makeItemStore(url, n: n)
                            let db = try RawDB(url)
                            return try measure { try db.exec("BEGIN; \(raw) COMMIT;") }
                        }
                    }
                )
            ])
    }

    /// Opens the database at `url` as a program would (WAL, synchronous=NORMAL), runs `sql`, closes it.
    static func openChangeClose(_ url: URL, _ sql: String) throws {
        var handle: OpaquePointer?
        guard sqlite3_open_v2(url.path, &handle, SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX, nil) == SQLITE_OK, let db = handle else {
            sqlite3_close_v2(handle)
            throw RawDB.RawError.open
        }
        defer { sqlite3_close_v2(db) }
        guard sqlite3_exec(db, "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL; \(sql)", nil, nil, nil) == SQLITE_OK else {
            throw RawDB.RawError.sql(String(cString: sqlite3_errmsg(db)))
        }
    }

    static func m1(_ o: Options) throws -> WorkloadResult {
        let next = try itemModel([
            AttributeDescription(name: "title", type: .string, defaultValue: ""),
            AttributeDescription(name: "rank", type: .integer64, defaultValue: 0),
            AttributeDescription(name: "weight", type: .double, defaultValue: 0.0),
            AttributeDescription(name: "note", type: .string, defaultValue: "none")
        ])
        return try migration("M1", "add an attribute", o, next: next, raw: "ALTER TABLE \"Item\" ADD COLUMN \"note\" TEXT DEFAULT 'none';")
    }

    static func m2(_ o: Options) throws -> WorkloadResult {
        let next = try itemModel([
            AttributeDescription(name: "name", type: .string, defaultValue: "", renamingIdentifier: "title"),
            AttributeDescription(name: "rank", type: .integer64, defaultValue: 0),
            AttributeDescription(name: "weight", type: .double, defaultValue: 0.0)
        ])
        let raw = """
            CREATE TABLE "Item2" (Z_PK INTEGER PRIMARY KEY, Z_ENT INTEGER NOT NULL, Z_OPT INTEGER NOT NULL, "name" TEXT, "rank" INTEGER, "weight" REAL);
            INSERT INTO "Item2" SELECT Z_PK, Z_ENT, Z_OPT, "title", "rank", "weight" FROM "Item";
            DROP TABLE "Item"; ALTER TABLE "Item2" RENAME TO "Item";
            """
        var result = try migration("M2", "rename an attribute (rebuild)", o, next: next, raw: raw)
        result.note = String(format: "peak RSS of the process %.0f MB", peakResidentMB())
        return result
    }
}
