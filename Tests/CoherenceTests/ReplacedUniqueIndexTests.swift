import Foundation
import Testing
@testable import Coherence
@testable import CoherenceContext
@testable import CoherencePostgreSQL
@testable import CoherenceSQLite
@testable import CoherenceStore

/// A unique index of the model's uniqueness constraints that another program replaced by an
/// index of the same name that does not keep the constraint: not unique, partial, or on other
/// columns. Coherence finds uniqueness conflicts through the index, so the store must notice
/// that the index is not the one it made (as it notices one that is gone) and make it again.
@Suite struct ReplacedUniqueIndexTests {
    private static let index = "Z_Town_UNIQUE_name"

    /// The statements another program runs in place of the unique index of `Town.name`.
    static let impostors: [String] = [
        "CREATE INDEX \"\(index)\" ON \"Town\" (name)",
        "CREATE UNIQUE INDEX \"\(index)\" ON \"Town\" (name) WHERE population < 0",
        "CREATE UNIQUE INDEX \"\(index)\" ON \"Town\" (population, name)"
    ]

    /// Runs `sqls` on the store at `url` as another program would.
    private static func runForeign(_ sqls: [String], _ type: StoreType, at url: URL) throws {
        if type == .sqlite {
            for sql in sqls { try runForeignSQL(sql, at: url.path) }
        } else {
            let connection = try PostgreSQLTestServer.connection()
            _ = try connection.execute("SET search_path TO \"\(PostgreSQLTestServer.schema(of: url))\"")
            for sql in sqls { _ = try connection.execute(sql) }
        }
    }

    /// Saves a second town named Paris in `coordinator`'s store; returns the save's error.
    private static func saveSecondParis(_ coordinator: PersistentStoreCoordinator) -> CoherenceError? {
        let context = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: coordinator)
        return context.performAndWait { () -> CoherenceError? in
            let town = Town(context: context)
            town.name = "Paris"
            town.population = 1
            do {
                try context.save()
                return nil
            } catch {
                return error as? CoherenceError
            }
        }
    }

    private static func names(_ coordinator: PersistentStoreCoordinator) throws -> [String] {
        let reader = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: coordinator)
        return try reader.performAndWait { try reader.fetch(FetchRequest<Town>()).map(\.name) }
    }

    private static func storeTypes() -> [StoreType] {
        [.sqlite] + (PostgreSQLTestServer.enabled ? [.postgreSQL] : [])
    }

    static let cases: [(StoreType, Int)] = storeTypes().flatMap { type in impostors.indices.map { (type, $0) } }

    /// Replaced while the store is closed: the open makes the right index again.
    @Test(arguments: cases)
    func aUniqueIndexReplacedWhileClosedIsMadeAgainAtOpen(_ type: StoreType, _ impostor: Int) throws {
        let dir = try TemporaryDirectory("replaced-unique-\(type)-\(impostor)")
        let url = try #require(try dir.storeURL(type, "store"))
        do {
            let coordinator = try makeCoordinator(type, in: dir)
            let context = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: coordinator)
            try context.performAndWait {
                Town(context: context).name = "Paris"
                try context.save()
            }
            try coordinator.remove(try #require(coordinator.persistentStores.first))
        }
        try Self.runForeign(["DROP INDEX \"\(Self.index)\"", Self.impostors[impostor]], type, at: url)
        let coordinator = PersistentStoreCoordinator(managedObjectModel: try makeTestModel())
        try coordinator.addPersistentStore(type: type, at: url)
        let error = Self.saveSecondParis(coordinator)
        #expect(error?.code == .conflict, "\(String(describing: error))")
        #expect(try Self.names(coordinator) == ["Paris"])
    }

    /// Dropped (nil) or replaced while a coordinator has the store open: its next save makes the
    /// right index again (on PostgreSQL too, where a dropped one used to let duplicates in).
    static let whileOpenCases: [(StoreType, Int?)] = storeTypes().flatMap { type in
        [(type, nil)] + impostors.indices.map { (type, $0) }
    }

    @Test(arguments: whileOpenCases)
    func aUniqueIndexReplacedWhileOpenIsMadeAgainByTheNextSave(_ type: StoreType, _ impostor: Int?) throws {
        let dir = try TemporaryDirectory("replaced-unique-open-\(type)-\(impostor ?? -1)")
        let coordinator = try makeCoordinator(type, in: dir)
        let url = try #require(try dir.storeURL(type, "store"))
        let context = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: coordinator)
        try context.performAndWait {
            Town(context: context).name = "Paris"
            try context.save()
        }
        try Self.runForeign(["DROP INDEX \"\(Self.index)\""] + (impostor.map { [Self.impostors[$0]] } ?? []), type, at: url)
        let error = Self.saveSecondParis(coordinator)
        #expect(error?.code == .conflict, "\(String(describing: error))")
        #expect(try Self.names(coordinator) == ["Paris"])
        // The index stays made: the next save of a duplicate is refused too.
        let again = Self.saveSecondParis(coordinator)
        #expect(again?.code == .conflict, "\(String(describing: again))")
    }

    /// Duplicates another program saved after dropping the index while the store is open: the
    /// next save is a typed error and writes nothing.
    @Test(arguments: storeTypes())
    func duplicatesSavedWhileOpenAreATypedSaveError(_ type: StoreType) throws {
        let dir = try TemporaryDirectory("replaced-unique-open-dup-\(type)")
        let coordinator = try makeCoordinator(type, in: dir)
        let url = try #require(try dir.storeURL(type, "store"))
        let context = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: coordinator)
        try context.performAndWait {
            Town(context: context).name = "Paris"
            try context.save()
        }
        try Self.runForeign(
            [
                "DROP INDEX \"\(Self.index)\"",
                "INSERT INTO \"Town\" (Z_PK, Z_ENT, Z_OPT, name, population) SELECT Z_PK + 100, Z_ENT, 1, name, 7 FROM \"Town\""
            ], type, at: url)
        let error = context.performAndWait { () -> CoherenceError? in
            Town(context: context).name = "Lyon"
            do {
                try context.save()
                return nil
            } catch {
                return error as? CoherenceError
            }
        }
        #expect(error?.code == .storeIncompatible && "\(String(describing: error))".contains("Paris"), "\(String(describing: error))")
        #expect(try Self.names(coordinator).sorted() == ["Paris", "Paris"])
    }

    /// Duplicates saved while the impostor stood are a typed open error, the store left as it was.
    @Test(arguments: storeTypes())
    func duplicatesSavedUnderAReplacedIndexAreATypedOpenError(_ type: StoreType) throws {
        let dir = try TemporaryDirectory("replaced-unique-dup-\(type)")
        let url = try #require(try dir.storeURL(type, "store"))
        do {
            let coordinator = try makeCoordinator(type, in: dir)
            let context = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: coordinator)
            try context.performAndWait {
                Town(context: context).name = "Paris"
                try context.save()
            }
            try coordinator.remove(try #require(coordinator.persistentStores.first))
        }
        try Self.runForeign(
            [
                "DROP INDEX \"\(Self.index)\"", Self.impostors[0],
                "INSERT INTO \"Town\" (Z_PK, Z_ENT, Z_OPT, name, population) SELECT Z_PK + 100, Z_ENT, 1, name, 7 FROM \"Town\""
            ], type, at: url)
        let coordinator = PersistentStoreCoordinator(managedObjectModel: try makeTestModel())
        #expect {
            try coordinator.addPersistentStore(type: type, at: url)
        } throws: { error in
            (error as? CoherenceError)?.code == .storeIncompatible && "\(error)".contains("Paris")
        }
        #expect(coordinator.persistentStores.isEmpty)
    }

    /// The indexes the store made itself, partial ones of a sub-entity included, are kept: a
    /// second open and a save change no schema.
    @Test func theStoresOwnIndexesAreKept() throws {
        let dir = try TemporaryDirectory("own-unique")
        let url = dir.file("store.sqlite")
        let model = try ManagedObjectModel(types: [UniqueBadge.self, CodedBadge.self, PlainBadge.self, Town.self, Person.self, Club.self])
        func schemaVersion() throws -> Int64 {
            let c = try SQLiteConnection(location: .file(url.path), readOnly: true)
            return try c.prepare("PRAGMA schema_version").rows { $0.int64(0) }.first ?? -1
        }
        var versions: [Int64] = []
        for attempt in 0..<2 {
            let coordinator = PersistentStoreCoordinator(managedObjectModel: model)
            let store = try coordinator.addPersistentStore(type: .sqlite, at: url)
            if attempt > 0 { versions.append(try schemaVersion()) }
            let context = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: coordinator)
            let error = context.performAndWait { () -> CoherenceError? in
                CodedBadge(context: context).code = "same"
                do {
                    try context.save()
                    return nil
                } catch {
                    return error as? CoherenceError
                }
            }
            #expect(attempt == 0 ? error == nil : error?.code == .conflict, "\(String(describing: error))")
            try coordinator.remove(store)
            versions.append(try schemaVersion())
        }
        #expect(versions.count == 3 && Set(versions).count == 1, "\(versions)")
    }
}

/// A store made by Core Data whose model has a uniqueness constraint and whose table lacks its
/// unique index (another program dropped it, or it was never made): duplicates were saved
/// silently, since stores of Core Data's layout were never given the index, at open or by a
/// save. They are now, as stores of Coherence's layout are.
@Suite struct CoreDataLayoutUniqueIndexTests {
    @Test func aCoreDataStoreGetsTheUniqueIndexOfItsConstraint() throws {
        let dir = try TemporaryDirectory("core-data-unique")
        let url = dir.file("authors.sqlite")
        try CoreDataStoreTests.makeCoreDataStore(
            at: url, entities: [(1, "Author", 0, 1)],
            [
                "CREATE TABLE ZAUTHOR (Z_PK INTEGER PRIMARY KEY, Z_ENT INTEGER, Z_OPT INTEGER, ZNAME VARCHAR)",
                "INSERT INTO ZAUTHOR VALUES (1, 1, 1, 'Ursula')"
            ])
        let model = try ManagedObjectModel(entities: [
            EntityDescription(
                name: "Author", properties: [AttributeDescription(name: "name", type: .string)], uniquenessConstraints: [["name"]])
        ])
        let coordinator = PersistentStoreCoordinator(managedObjectModel: model)
        try coordinator.addPersistentStore(type: .sqlite, at: url)
        let context = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: coordinator)
        func saveUrsula() -> CoherenceError? {
            context.performAndWait { () -> CoherenceError? in
                do {
                    try context.insertNewObject(forEntityName: "Author").setValue("Ursula", forKey: "name")
                    try context.save()
                    return nil
                } catch {
                    context.rollback()
                    return error as? CoherenceError
                }
            }
        }
        let atOpen = saveUrsula()
        #expect(atOpen?.code == .conflict, "\(String(describing: atOpen))")
        try runForeignSQL("DROP INDEX \"Z_Author_UNIQUE_name\"", at: url.path)
        let whileOpen = saveUrsula()
        #expect(whileOpen?.code == .conflict, "\(String(describing: whileOpen))")
        let c = try SQLiteConnection(location: .file(url.path), readOnly: true)
        #expect(try c.prepare("SELECT ZNAME FROM ZAUTHOR").rows { $0.string(0) } == ["Ursula"])
    }
}

class UniqueBadge: ManagedObject {
    @Attribute var label: String = ""
    override class var isAbstractEntity: Bool { self == UniqueBadge.self }
}
final class CodedBadge: UniqueBadge {
    @Attribute(.unique) var code: String = ""
}
final class PlainBadge: UniqueBadge {}
