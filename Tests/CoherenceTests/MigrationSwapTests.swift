import Foundation
import Testing
@testable import Coherence
@testable import CoherenceBase
@testable import CoherenceContext
@testable import CoherencePostgreSQL
@testable import CoherenceSQLite
@testable import CoherenceStore

/// Two entities that swap names (and attributes and relationships that swap with them) through
/// renaming identifiers: rows, relationships and persistent history follow the new names.
@Suite("Migrations: names swapped")
struct MigrationSwapTests {
    @Test(arguments: storedTypes)
    func twoEntitiesSwapNamesWithTheirAttributesAndRelationships(_ type: StoreType) throws {
        let dir = try TemporaryDirectory()
        let url = try migrationStoreURL(type, dir)
        let tracking = StoreOptions(persistentHistoryTracking: true)
        let v1 = try ManagedObjectModel(entities: [
            EntityDescription(
                name: "A",
                properties: [
                    AttributeDescription(name: "name", type: .string),
                    AttributeDescription(name: "x", type: .integer32, defaultValue: Int32(0)),
                    RelationshipDescription(name: "b", destination: "B", inverse: "a")
                ]),
            EntityDescription(
                name: "B",
                properties: [
                    AttributeDescription(name: "name", type: .string), AttributeDescription(name: "y", type: .string, isOptional: true),
                    RelationshipDescription(name: "a", destination: "A", inverse: "b", isToMany: true)
                ])
        ])
        try withMigrationStore(v1, at: url, options: tracking) { context in
            let b = try insertObject(context, "B", ["name": "b1", "y": "why"])
            try insertObject(context, "A", ["name": "a1", "x": Int32(5)]).relate("b", to: [b])
            try insertObject(context, "A", ["name": "a2", "x": Int32(6)]).relate("b", to: [b])
            try context.save()
        }
        let v2 = try ManagedObjectModel(entities: [
            EntityDescription(
                name: "B",
                properties: [
                    AttributeDescription(name: "name", type: .string),
                    AttributeDescription(name: "y", type: .integer32, defaultValue: Int32(0), renamingIdentifier: "x"),
                    RelationshipDescription(name: "a", destination: "A", inverse: "b", renamingIdentifier: "b")
                ], renamingIdentifier: "A"),
            EntityDescription(
                name: "A",
                properties: [
                    AttributeDescription(name: "name", type: .string),
                    AttributeDescription(name: "x", type: .string, isOptional: true, renamingIdentifier: "y"),
                    RelationshipDescription(name: "b", destination: "B", inverse: "a", isToMany: true, renamingIdentifier: "a")
                ], renamingIdentifier: "B")
        ])
        let coordinator = PersistentStoreCoordinator(managedObjectModel: v2)
        let store = try coordinator.addPersistentStore(type: type, at: url, options: tracking)
        defer { try? coordinator.remove(store) }
        let context = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: coordinator)
        try context.performAndWait {
            let bs = try fetchByName(context, "B")
            #expect(bs.map(\.nameValue) == ["a1", "a2"])
            #expect(bs.map { (try? $0.value(forKey: "y")) as? Int32 } == [5, 6])
            #expect(bs.map { $0.related("a").map(\.nameValue) } == [["b1"], ["b1"]])
            let as_ = try fetchByName(context, "A")
            #expect(as_.map { (try? $0.value(forKey: "x")) as? String } == ["why"])
            #expect(as_.map { $0.related("b").map(\.nameValue).sorted() } == [["a1", "a2"]])
            try insertObject(context, "A", ["name": "a9"])
            try insertObject(context, "B", ["name": "b9"])
            try context.save()
        }
        let history = try coordinator.execute(PersistentHistoryChangeRequest.fetchHistory(after: nil)).transactions
        #expect(history.count == 2)
        let first = history.first?.changes ?? []
        #expect(Set(first.map { $0.changedObjectID.entity.name }) == ["A", "B"])
        #expect(first.filter { $0.changedObjectID.entity.name == "B" }.count == 2)
    }
}
