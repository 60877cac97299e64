import Coherence
import Foundation
import GRDB

// The same schema three ways: Person(id, name, email, age, score, createdAt, town) with an index
// on age, and Town for the relationship workload. Coherence, like Core Data, indexes every
// to-one foreign key (so the inverse to-many and delete rules are fast); the raw and GRDB tables
// get the same index on `townId`, so all three maintain the same indexes.

final class BPerson: ManagedObject {
    @Attribute var id: Int = 0
    @Attribute var name: String = ""
    @Attribute var email: String = ""
    @Attribute var age: Int = 0
    @Attribute var score: Double = 0
    @Attribute var createdAt: Date = Date(timeIntervalSinceReferenceDate: 0)
    @Relationship(inverse: "people") var town: BTown?
    override class var entityName: String { "Person" }
    override class var indexes: [[String]] { [["age"]] }
    override class var entityUserInfo: [String: any Sendable] { ["uniquenessAttributes": "id"] }
}

final class BTown: ManagedObject {
    @Attribute var name: String = ""
    @Relationship(inverse: "town") var people: Set<BPerson>
    override class var entityName: String { "Town" }
}

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

/// Deterministic test data.
enum Data_ {
    static func name(_ i: Int, _ n: Int) -> String { "name-\((i &* 7919) % max(n, 1))" }
    static func email(_ i: Int) -> String { "p\(i)@example.com" }
    static func age(_ i: Int) -> Int { i % 80 }
    static func score(_ i: Int) -> Double { Double(i) * 0.5 }
    static func created(_ i: Int) -> Date { Date(timeIntervalSinceReferenceDate: 700_000_000 + Double(i)) }
}

let benchmarkModel: ManagedObjectModel = {
    do { return try ManagedObjectModel(types: [BPerson.self, BTown.self]) } catch {
        print("model error: \(error)")
        exit(1)
    }
}()

/// A coordinator with one SQLite store at `url`.
func coherenceStore(_ url: URL, options: StoreOptions = StoreOptions()) throws -> PersistentStoreCoordinator {
    let c = PersistentStoreCoordinator(managedObjectModel: benchmarkModel)
    try c.addPersistentStore(type: .sqlite, at: url, options: options)
    return c
}

/// A private context on a coordinator.
func backgroundContext(_ c: PersistentStoreCoordinator) -> ManagedObjectContext {
    ManagedObjectContext(concurrencyType: .privateQueue, coordinator: c)
}

/// Inserts person `i` (of `n`) with the benchmark's values.
@discardableResult @inline(__always)
func insertPerson(_ i: Int, of n: Int, into context: ManagedObjectContext) -> BPerson {
    let p = BPerson(context: context)
    p.id = i
    p.name = Data_.name(i, n)
    p.email = Data_.email(i)
    p.age = Data_.age(i)
    p.score = Data_.score(i)
    p.createdAt = Data_.created(i)
    return p
}

/// Fills a Coherence store with `n` people (and `towns` towns when > 0).
func fillCoherence(_ c: PersistentStoreCoordinator, n: Int, towns: Int = 0, offset: Int = 0) throws {
    let context = backgroundContext(c)
    try context.performAndWait {
        let townObjects: [BTown] = (0..<towns).map { t in
            let town = BTown(context: context)
            town.name = "Town \(t)"
            return town
        }
        for i in offset..<(offset + n) {
            let p = insertPerson(i, of: n, into: context)
            if !townObjects.isEmpty { p.town = townObjects[i % townObjects.count] }
        }
        try context.save()
    }
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
