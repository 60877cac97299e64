import BenchmarkSupport
import Coherence
import Foundation
import GRDB
import GRDBSQLite

/// One person's values, prepared before the timed part (what a batch insert starts from: rows
/// already decoded, say from JSON).
struct PreparedPerson {
    var id: Int
    var name: String
    var email: String
    var age: Int
    var score: Double
    var createdAt: Date

    init(_ i: Int, of n: Int) {
        id = i
        name = Data_.name(i, n)
        email = Data_.email(i)
        age = Data_.age(i)
        score = Data_.score(i)
        createdAt = Data_.created(i)
    }

    /// The row as a batch insert's dictionary.
    var dictionary: [String: any Sendable] {
        ["id": id, "name": name, "email": email, "age": age, "score": score, "createdAt": createdAt]
    }
}

extension Workloads {
    // MARK: B1 batch insert of N rows

    /// Every implementation inserts the same prepared values in one transaction: Coherence from
    /// the request's dictionaries, raw SQLite and GRDB from the prepared structs.
    static func b1(_ o: Options) throws -> WorkloadResult {
        let n = o.n(100_000)
        let prepared = (0..<n).map { PreparedPerson($0, of: n) }
        let rows = prepared.map(\.dictionary)
        return try batchInsert(
            "B1", "batch insert \(n) rows (dictionaries)", o, prepared,
            coherence: { c in try c.execute(BatchInsertRequest<BPerson>(objects: rows)) })
    }

    /// A batch insert of prepared people: Coherence through `coherence`, raw SQLite and GRDB
    /// from the prepared structs.
    private static func batchInsert(
        _ name: String, _ title: String, _ o: Options, _ prepared: [PreparedPerson],
        coherence: @escaping (PersistentStoreCoordinator) throws -> Void
    ) throws -> WorkloadResult {
        try interleave(
            name, title, reps: o.repetitions,
            [
                (
                    "coherence",
                    {
                        try withTemporaryDirectory { dir in
                            let c = try coherenceStore(dir.appendingPathComponent("c.sqlite"))
                            return try measure { try coherence(c) }
                        }
                    }
                ),
                (
                    "raw",
                    {
                        try withTemporaryDirectory { dir in
                            let db = try RawDB(dir.appendingPathComponent("r.sqlite"))
                            return try measure {
                                try db.exec("BEGIN")
                                let st = try db.prepare(
                                    "INSERT INTO person (id, name, email, age, score, createdAt, townId) VALUES (?, ?, ?, ?, ?, ?, ?)")
                                for p in prepared {
                                    sqlite3_bind_int64(st, 1, Int64(p.id))
                                    bindText(st, 2, p.name)
                                    bindText(st, 3, p.email)
                                    sqlite3_bind_int64(st, 4, Int64(p.age))
                                    sqlite3_bind_double(st, 5, p.score)
                                    sqlite3_bind_double(st, 6, p.createdAt.timeIntervalSinceReferenceDate)
                                    sqlite3_bind_null(st, 7)
                                    guard sqlite3_step(st) == SQLITE_DONE else {
                                        throw RawDB.RawError.sql(String(cString: sqlite3_errmsg(db.db)))
                                    }
                                    sqlite3_reset(st)
                                }
                                sqlite3_finalize(st)
                                try db.exec("COMMIT")
                            }
                        }
                    }
                ),
                (
                    "grdb",
                    {
                        try withTemporaryDirectory { dir in
                            let pool = try grdbPool(dir.appendingPathComponent("g.sqlite"))
                            let people = prepared.map {
                                GPerson(
                                    id: Int64($0.id), name: $0.name, email: $0.email, age: $0.age, score: $0.score, createdAt: $0.createdAt,
                                    townId: nil)
                            }
                            return try measure { try pool.write { db in for p in people { try p.insert(db) } } }
                        }
                    }
                )
            ])
    }

    // MARK: B2 batch delete of K rows by predicate

    /// Deletes the half of 2K people younger than 40 (an indexed column in every schema).
    static func b2(_ o: Options) throws -> WorkloadResult {
        let k = o.n(10_000)
        return try interleave(
            "B2", "batch delete \(k) of \(2 * k) rows by predicate", reps: o.repetitions,
            [
                (
                    "coherence",
                    {
                        try withTemporaryDirectory { dir in
                            let c = try coherenceStore(dir.appendingPathComponent("c.sqlite"))
                            try c.execute(
                                BatchInsertRequest<BPerson>(objects: (0..<(2 * k)).map { PreparedPerson($0, of: 2 * k).dictionary }))
                            var deleted = 0
                            let time = try measure {
                                var request = BatchDeleteRequest(fetchRequest: FetchRequest<BPerson>(predicate: #Predicate { $0.age < 40 }))
                                request.resultType = .count
                                deleted = try c.execute(request).count ?? 0
                            }
                            guard deleted == k else { throw RawDB.RawError.sql("deleted \(deleted), expected \(k)") }
                            return time
                        }
                    }
                ),
                (
                    "raw",
                    {
                        try withTemporaryDirectory { dir in
                            let raw = try RawDB(dir.appendingPathComponent("r.sqlite"))
                            try rawInsert(raw, n: 2 * k)
                            return try measure {
                                try raw.exec("BEGIN")
                                let st = try raw.prepare("DELETE FROM person WHERE age < ?")
                                sqlite3_bind_int64(st, 1, 40)
                                sqlite3_step(st)
                                sqlite3_finalize(st)
                                try raw.exec("COMMIT")
                            }
                        }
                    }
                ),
                (
                    "grdb",
                    {
                        try withTemporaryDirectory { dir in
                            let pool = try grdbPool(dir.appendingPathComponent("g.sqlite"))
                            try pool.write { db in for i in 0..<(2 * k) { try gPerson(i, 2 * k).insert(db) } }
                            return try measure { _ = try pool.write { db in try GPerson.filter(Column("age") < 40).deleteAll(db) } }
                        }
                    }
                )
            ])
    }
}
