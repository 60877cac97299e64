import BenchmarkSupport
import Coherence
import Foundation
import GRDB

// The same schema three ways: Person(id, name, email, age, score, createdAt, town) with an index
// on age, and Town for the relationship workload. Coherence, like Core Data, indexes every
// to-one foreign key (so the inverse to-many and delete rules are fast); the raw and GRDB tables
// get the same index on `townId`, so all three maintain the same indexes.

struct GPerson: Codable, FetchableRecord, PersistableRecord {
    static let databaseTableName = "person"
    var id: Int64
    var name: String
    var email: String
    var age: Int
    var score: Double
    var createdAt: Date
    var townId: Int64?
}

struct GTown: Codable, FetchableRecord, PersistableRecord {
    static let databaseTableName = "town"
    var id: Int64
    var name: String
}

/// A coordinator with one SQLite store at `url`.
func coherenceStore(_ url: URL, options: StoreOptions = StoreOptions()) throws -> PersistentStoreCoordinator {
    let c = PersistentStoreCoordinator(managedObjectModel: benchmarkModel)
    try c.addPersistentStore(type: .sqlite, at: url, options: options)
    return c
}

/// A GRDB pool with WAL and synchronous=NORMAL, and the schema.
func grdbPool(_ url: URL) throws -> DatabasePool {
    var config = Configuration()
    config.prepareDatabase { db in try db.execute(sql: "PRAGMA synchronous = NORMAL") }
    let pool = try DatabasePool(path: url.path, configuration: config)
    try pool.write { db in
        try db.execute(
            sql: """
                CREATE TABLE IF NOT EXISTS town (id INTEGER PRIMARY KEY, name TEXT NOT NULL);
                CREATE TABLE IF NOT EXISTS person (id INTEGER PRIMARY KEY, name TEXT NOT NULL, email TEXT NOT NULL, age INTEGER NOT NULL,
                  score REAL NOT NULL, createdAt DATETIME NOT NULL, townId INTEGER REFERENCES town(id));
                CREATE INDEX IF NOT EXISTS person_age ON person(age);
                CREATE INDEX IF NOT EXISTS person_town ON person(townId);
                """)
    }
    return pool
}

func gPerson(_ i: Int, _ n: Int, town: Int64? = nil) -> GPerson {
    GPerson(
        id: Int64(i), name: Data_.name(i, n), email: Data_.email(i), age: Data_.age(i), score: Data_.score(i),
        createdAt: Data_.created(i), townId: town)
}
