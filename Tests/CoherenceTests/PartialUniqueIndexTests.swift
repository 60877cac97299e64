import Foundation
import Testing
@testable import Coherence
@testable import CoherenceContext
@testable import CoherencePostgreSQL
@testable import CoherenceSQLite
@testable import CoherenceStore

class IndexedPet: ManagedObject {
    @Attribute var name: String = ""
}
/// A sub-entity with a uniqueness constraint: its unique index is partial (`WHERE Z_ENT IN (…)`).
final class IndexedDog: IndexedPet {
    override class var uniquenessConstraints: [[String]] { [["name"]] }
}
final class IndexedCat: IndexedPet {}

/// The partial unique index of a sub-entity's uniqueness constraint, replaced by another program
/// with a partial index of the same name and columns but another condition, which leaves out
/// the rows the constraint holds: the store must not take it for its own.
@Suite struct PartialUniqueIndexTests {
    static let index = "Z_IndexedDog_UNIQUE_name"

    static func model() throws -> ManagedObjectModel {
        try ManagedObjectModel(types: [IndexedPet.self, IndexedDog.self, IndexedCat.self])
    }

    static func run(_ sqls: [String], _ type: StoreType, at url: URL) throws {
        if type == .sqlite {
            for sql in sqls { try runForeignSQL(sql, at: url.path) }
        } else {
            let connection = try PostgreSQLTestServer.connection()
            _ = try connection.execute("SET search_path TO \"\(PostgreSQLTestServer.schema(of: url))\"")
            for sql in sqls { _ = try connection.execute(sql) }
        }
    }

    static func saveDog(_ name: String, in coordinator: PersistentStoreCoordinator) -> CoherenceError? {
        let context = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: coordinator)
        return context.performAndWait { () -> CoherenceError? in
            IndexedDog(context: context).name = name
            do {
                try context.save()
                return nil
            } catch {
                return error as? CoherenceError
            }
        }
    }

    static func dogs(_ coordinator: PersistentStoreCoordinator) throws -> Int {
        let context = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: coordinator)
        return try context.performAndWait { try context.count(for: FetchRequest<IndexedDog>()) }
    }

    static let impostors = ["Z_ENT < 0", "name <> 'Rex'"]
    static let cases: [(StoreType, Int)] = ([StoreType.sqlite] + (PostgreSQLTestServer.enabled ? [.postgreSQL] : [])).flatMap { type in
        impostors.indices.map { (type, $0) }
    }

    /// Replaced while the store is closed: the open makes the right index again.
    @Test(arguments: cases)
    func aPartialIndexWithAnotherConditionIsMadeAgainAtOpen(_ type: StoreType, _ impostor: Int) throws {
        let dir = try TemporaryDirectory("partial-unique-\(type)-\(impostor)")
        let url = try #require(try dir.storeURL(type, "store"))
        do {
            let coordinator = PersistentStoreCoordinator(managedObjectModel: try Self.model())
            try coordinator.addPersistentStore(type: type, at: url)
            #expect(Self.saveDog("Rex", in: coordinator) == nil)
            try coordinator.remove(try #require(coordinator.persistentStores.first))
        }
        try Self.run(
            [
                "DROP INDEX \"\(Self.index)\"",
                "CREATE UNIQUE INDEX \"\(Self.index)\" ON \"IndexedPet\" (name) WHERE \(Self.impostors[impostor])"
            ], type, at: url)
        let coordinator = PersistentStoreCoordinator(managedObjectModel: try Self.model())
        try coordinator.addPersistentStore(type: type, at: url)
        let error = Self.saveDog("Rex", in: coordinator)
        #expect(error?.code == .conflict, "\(String(describing: error))")
        #expect(try Self.dogs(coordinator) == 1)
    }

    /// Replaced while a coordinator has the store open (SQLite: its next save looks again).
    @Test(arguments: cases.filter { $0.0 == .sqlite })
    func aPartialIndexWithAnotherConditionIsMadeAgainByTheNextSave(_ type: StoreType, _ impostor: Int) throws {
        let dir = try TemporaryDirectory("partial-unique-open-\(impostor)")
        let url = try #require(try dir.storeURL(type, "store"))
        let coordinator = PersistentStoreCoordinator(managedObjectModel: try Self.model())
        try coordinator.addPersistentStore(type: type, at: url)
        #expect(Self.saveDog("Rex", in: coordinator) == nil)
        try Self.run(
            [
                "DROP INDEX \"\(Self.index)\"",
                "CREATE UNIQUE INDEX \"\(Self.index)\" ON \"IndexedPet\" (name) WHERE \(Self.impostors[impostor])"
            ], type, at: url)
        let error = Self.saveDog("Rex", in: coordinator)
        #expect(error?.code == .conflict, "\(String(describing: error))")
        #expect(try Self.dogs(coordinator) == 1)
    }

    /// The store's own partial index is kept: reopening and saving make nothing again, and a
    /// cat may take a dog's name.
    @Test(arguments: [StoreType.sqlite] + (PostgreSQLTestServer.enabled ? [StoreType.postgreSQL] : []))
    func theStoresOwnPartialIndexIsKept(_ type: StoreType) throws {
        let dir = try TemporaryDirectory("partial-unique-own-\(type)")
        let url = try #require(try dir.storeURL(type, "store"))
        /// SQLite: the schema's version; PostgreSQL: the index's object ID.
        func identity() throws -> String {
            if type == .sqlite {
                let c = try SQLiteConnection(location: .file(url.path), readOnly: true)
                return "\(try c.prepare("PRAGMA schema_version").rows { $0.int64(0) })"
            }
            let connection = try PostgreSQLTestServer.connection()
            _ = try connection.execute("SET search_path TO \"\(PostgreSQLTestServer.schema(of: url))\"")
            return "\(try connection.execute("SELECT to_regclass('\"\(Self.index)\"')::OID::TEXT").rows)"
        }
        var identities: [String] = []
        for attempt in 0..<2 {
            let coordinator = PersistentStoreCoordinator(managedObjectModel: try Self.model())
            let store = try coordinator.addPersistentStore(type: type, at: url)
            if attempt == 0 {
                #expect(Self.saveDog("Rex", in: coordinator) == nil)
                identities.append(try identity())
            } else {
                let context = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: coordinator)
                try context.performAndWait {
                    IndexedCat(context: context).name = "Rex"
                    try context.save()
                }
                #expect(Self.saveDog("Rex", in: coordinator)?.code == .conflict)
            }
            try coordinator.remove(store)
        }
        identities.append(try identity())
        #expect(identities.count == 2 && identities[0] == identities[1], "\(identities)")
    }
}
