import Foundation
import Testing
@testable import Coherence
@testable import CoherenceContext
@testable import CoherencePostgreSQL
@testable import CoherenceSQLite
@testable import CoherenceStore

/// A unique index that the model's uniqueness constraints made, dropped by another program:
/// Coherence finds uniqueness conflicts through the index, so a store without it saved duplicates
/// silently. Opening the store makes the index again; when the rows it holds already break the
/// constraint, the open is a typed error and the store is left as it was.
@Suite struct DroppedUniqueIndexTests {
    private static let index = "Z_Town_UNIQUE_name"

    /// Makes a store with one town, closes it and drops the unique index of `Town.name`
    /// (inserting `duplicate`, a second town of the same name, when given).
    private static func storeWithoutIndex(_ type: StoreType, in dir: TemporaryDirectory, duplicate: Bool) throws -> URL {
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
        let duplicateSQL = "INSERT INTO \"Town\" (Z_PK, Z_ENT, Z_OPT, name, population) SELECT Z_PK + 100, Z_ENT, 1, name, 7 FROM \"Town\""
        if type == .sqlite {
            try runForeignSQL("DROP INDEX \"\(index)\"", at: url.path)
            if duplicate { try runForeignSQL(duplicateSQL, at: url.path) }
        } else {
            let schema = PostgreSQLTestServer.schema(of: url)
            let connection = try PostgreSQLTestServer.connection()
            _ = try connection.execute("SET search_path TO \"\(schema)\"")
            _ = try connection.execute("DROP INDEX \"\(index)\"")
            if duplicate { _ = try connection.execute(duplicateSQL) }
        }
        return url
    }

    @Test(arguments: [StoreType.sqlite] + (PostgreSQLTestServer.enabled ? [StoreType.postgreSQL] : []))
    func aDroppedUniqueIndexIsMadeAgainAtOpen(_ type: StoreType) throws {
        let dir = try TemporaryDirectory("dropped-unique-\(type)")
        let url = try Self.storeWithoutIndex(type, in: dir, duplicate: false)
        let coordinator = PersistentStoreCoordinator(managedObjectModel: try makeTestModel())
        try coordinator.addPersistentStore(type: type, at: url)
        let context = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: coordinator)
        let error = saveError(context) { Town(context: context).name = "Paris" }
        #expect(error?.code == .conflict, "\(String(describing: error))")
        let reader = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: coordinator)
        let names = try reader.performAndWait { try reader.fetch(FetchRequest<Town>()).map(\.name) }
        #expect(names == ["Paris"])
    }

    @Test(arguments: [StoreType.sqlite] + (PostgreSQLTestServer.enabled ? [StoreType.postgreSQL] : []))
    func duplicatesSavedWithoutTheIndexAreATypedOpenError(_ type: StoreType) throws {
        let dir = try TemporaryDirectory("dropped-unique-dup-\(type)")
        let url = try Self.storeWithoutIndex(type, in: dir, duplicate: true)
        let coordinator = PersistentStoreCoordinator(managedObjectModel: try makeTestModel())
        #expect {
            try coordinator.addPersistentStore(type: type, at: url)
        } throws: { error in
            (error as? CoherenceError)?.code == .storeIncompatible && "\(error)".contains("Paris")
        }
        #expect(coordinator.persistentStores.isEmpty)
    }

    /// Dropped while a coordinator has the SQLite store open: its next save (which looks at the
    /// schema when it changed) makes the index again, and a duplicate is a conflict.
    @Test func aUniqueIndexDroppedWhileOpenIsMadeAgainByTheNextSave() throws {
        let dir = try TemporaryDirectory("dropped-unique-open")
        let coordinator = try makeCoordinator(.sqlite, in: dir)
        let url = try #require(try dir.storeURL(.sqlite, "store"))
        let context = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: coordinator)
        try context.performAndWait {
            Town(context: context).name = "Paris"
            try context.save()
        }
        try runForeignSQL("DROP INDEX \"\(Self.index)\"", at: url.path)
        let error = saveError(context) { Town(context: context).name = "Paris" }
        #expect(error?.code == .conflict, "\(String(describing: error))")
        let reader = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: coordinator)
        let names = try reader.performAndWait { try reader.fetch(FetchRequest<Town>()).map(\.name) }
        #expect(names == ["Paris"])
    }

    /// A unique index that another program drops again after every repair: a PostgreSQL save
    /// repairs it a bounded number of times, then fails with `.storeWriteFailed`, writing
    /// nothing (it started over for ever before). Once the index stays, saves work and a
    /// duplicate is a conflict.
    @Test(.postgreSQLServer) func aUniqueIndexDroppedAfterEveryRepairFailsTheSave() throws {
        let dir = try TemporaryDirectory("dropped-unique-churn")
        let coordinator = try makeCoordinator(.postgreSQL, in: dir)
        let store = try #require(coordinator.persistentStores.first?.engine as? PostgreSQLStore)
        let url = try #require(try dir.storeURL(.postgreSQL, "store"))
        let context = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: coordinator)
        try context.performAndWait {
            Town(context: context).name = "Paris"
            try context.save()
        }
        let admin = try PostgreSQLTestServer.connection()
        _ = try admin.execute("SET search_path TO \"\(PostgreSQLTestServer.schema(of: url))\"")
        let drops = LockedValue(0)
        store.uniqueIndexRepairHook.withLock {
            $0 = { () throws(CoherenceError) in
                drops.withLock { $0 += 1 }
                do { _ = try admin.execute("DROP INDEX \"\(Self.index)\"") } catch {
                    throw CoherenceError(.storeWriteFailed, "The test could not drop the index: \(error)")
                }
            }
        }
        _ = try admin.execute("DROP INDEX \"\(Self.index)\"")
        let error = saveError(context) { Town(context: context).name = "Lyon" }
        #expect(error?.code == .storeWriteFailed, "\(String(describing: error))")
        #expect(drops.withLock { $0 } == PostgreSQLStore.maximumUniqueIndexRepairs)
        let reader = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: coordinator)
        #expect(try reader.performAndWait { try reader.fetch(FetchRequest<Town>()).map(\.name) } == ["Paris"])

        // The index stays from now on: the pending town saves, a duplicate is a conflict.
        store.uniqueIndexRepairHook.withLock { $0 = nil }
        try context.performAndWait { try context.save() }
        let duplicate = saveError(context) { Town(context: context).name = "Paris" }
        #expect(duplicate?.code == .conflict, "\(String(describing: duplicate))")
        #expect(try reader.performAndWait { try reader.fetch(FetchRequest<Town>()).map(\.name).sorted() } == ["Lyon", "Paris"])
    }

    /// A unique index whose name passes PostgreSQL's 63 bytes (the server cuts it) is found at
    /// the next open, not made again, and still refuses duplicates.
    @Test(arguments: [StoreType.sqlite] + (PostgreSQLTestServer.enabled ? [StoreType.postgreSQL] : []))
    func aLongUniqueIndexNameIsFoundAtTheNextOpen(_ type: StoreType) throws {
        let dir = try TemporaryDirectory("long-unique-\(type)")
        let model = try ManagedObjectModel(types: [LongUniqueNameItem.self])
        let url = try #require(try dir.storeURL(type, "store"))
        for attempt in 0..<2 {
            let coordinator = PersistentStoreCoordinator(managedObjectModel: model)
            let store = try coordinator.addPersistentStore(type: type, at: url)
            let context = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: coordinator)
            let error = saveError(context) {
                LongUniqueNameItem(context: context).codeThatIsLongEnoughToPassTheLimitOfPostgreSQLNames = "same"
            }
            #expect(attempt == 0 ? error == nil : error?.code == .conflict, "\(String(describing: error))")
            try coordinator.remove(store)
        }
    }
}

final class LongUniqueNameItem: ManagedObject {
    @Attribute(.unique) var codeThatIsLongEnoughToPassTheLimitOfPostgreSQLNames: String = ""
}
