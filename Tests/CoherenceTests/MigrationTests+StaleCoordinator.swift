import Foundation
import Testing
@testable import Coherence
@testable import CoherenceBase
@testable import CoherenceContext
@testable import CoherenceStore

/// A coordinator that opened a store before another coordinator (another process, another
/// instance) migrated it writes nothing more: its rows would carry the old version's entity
/// numbers. SQLite checks it with the write transaction's history check, PostgreSQL in the
/// write transaction's `BEGIN` pipeline.
extension MigrationTests {
    @Test(arguments: storedTypes)
    func aCoordinatorOpenedBeforeAMigrationElsewhereWritesNothing(_ type: StoreType) throws {
        let dir = try TemporaryDirectory()
        let url = try migrationStoreURL(type, dir)
        try Self.fill(url)
        let old = PersistentStoreCoordinator(managedObjectModel: try Self.v1())
        let oldStore = try old.addPersistentStore(type: type, at: url)
        defer { try? old.remove(oldStore) }
        let oldContext = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: old)
        // It has written before: the check is not only a first write's.
        try oldContext.performAndWait {
            try insertObject(oldContext, "Town", ["name": "Bern"])
            try oldContext.save()
        }
        // Address sorts first: every entity number moves.
        let v2 = try ManagedObjectModel(entities: [
            EntityDescription(name: "Address", properties: [AttributeDescription(name: "name", type: .string, isOptional: true)]),
            Self.person(indexes: [["age"]]), Self.town()
        ])
        try withMigrationStore(v2, at: url) { _ in }
        let before = try Self.snapshot(url)

        let saveError = #expect(throws: CoherenceError.self) {
            try oldContext.performAndWait {
                try insertObject(oldContext, "Person", ["name": "Dee", "age": Int16(3)])
                try oldContext.save()
            }
        }
        #expect(saveError?.code == .storeIncompatible)
        let batchError = #expect(throws: CoherenceError.self) {
            try old.execute(BatchDeleteRequest(fetchRequest: FetchRequest<ManagedObject>(entityName: "Town")))
        }
        #expect(batchError?.code == .storeIncompatible)
        #expect(try Self.snapshot(url) == before)
        let (people, towns, addresses) = try withMigrationStore(v2, at: url) { context in
            (
                try fetchByName(context, "Person").map(\.nameValue), try fetchByName(context, "Town").map(\.nameValue),
                try context.count(for: FetchRequest<ManagedObject>(entityName: "Address"))
            )
        }
        #expect(people == ["Ada", "Bob", "Cy"])
        #expect(towns == ["Bern", "Oslo", "Rome"])
        #expect(addresses == 0)
    }
}
