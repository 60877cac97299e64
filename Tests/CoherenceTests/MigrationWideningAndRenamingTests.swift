import Foundation
import Testing
@testable import Coherence
@testable import CoherenceBase
@testable import CoherenceContext
@testable import CoherencePostgreSQL
@testable import CoherenceSQLite
@testable import CoherenceStore

/// Float values NaN, ±0, ±infinity and the extremes widened to Double keep their bits, and a
/// many-to-many relationship renamed on both sides, with both its entities, keeps its pairs and
/// its history.
@Suite("Migrations: Float widened to Double, a many-to-many renamed")
struct MigrationWideningAndRenamingTests {
    @Test(arguments: storedTypes)
    func floatValuesWidenedToDoubleKeepTheirBits(_ type: StoreType) throws {
        let dir = try TemporaryDirectory()
        let url = try migrationStoreURL(type, dir)
        let values: [Float] = [.nan, -0.0, .infinity, -.infinity, .greatestFiniteMagnitude, 0.1, .leastNonzeroMagnitude]
        let v1 = try ManagedObjectModel(entities: [
            EntityDescription(
                name: "N",
                properties: [
                    AttributeDescription(name: "i", type: .integer16, defaultValue: Int16(0)),
                    AttributeDescription(name: "f", type: .float, isOptional: true)
                ])
        ])
        try withMigrationStore(v1, at: url) { context in
            for (i, v) in values.enumerated() { try insertObject(context, "N", ["i": Int16(i), "f": v]) }
            try context.save()
        }
        let v2 = try ManagedObjectModel(entities: [
            EntityDescription(
                name: "N",
                properties: [
                    AttributeDescription(name: "i", type: .integer16, defaultValue: Int16(0)),
                    AttributeDescription(name: "f", type: .double, isOptional: true)
                ])
        ])
        try withMigrationStore(v2, at: url) { context in
            let rows = try context.fetch(FetchRequest<ManagedObject>(entityName: "N")).sorted {
                ((try? $0.value(forKey: "i")) as? Int16 ?? 0) < ((try? $1.value(forKey: "i")) as? Int16 ?? 0)
            }
            let got = rows.map { (try? $0.value(forKey: "f")) as? Double }
            #expect(got.count == values.count)
            for (g, v) in zip(got, values) {
                let want = Double(v)
                #expect(
                    g.map { $0.bitPattern == want.bitPattern || ($0.isNaN && want.isNaN) } == true, "\(String(describing: g)) vs \(want)")
            }
        }
    }

    @Test(arguments: storedTypes)
    func aManyToManyRenamedWithItsEntitiesKeepsItsPairsAndHistory(_ type: StoreType) throws {
        let dir = try TemporaryDirectory()
        let url = try migrationStoreURL(type, dir)
        let tracking = StoreOptions(persistentHistoryTracking: true)
        let v1 = try ManagedObjectModel(entities: [
            EntityDescription(
                name: "Item",
                properties: [
                    AttributeDescription(name: "name", type: .string),
                    RelationshipDescription(name: "tags", destination: "Tag", inverse: "items", isToMany: true)
                ]),
            EntityDescription(
                name: "Tag",
                properties: [
                    AttributeDescription(name: "name", type: .string),
                    RelationshipDescription(name: "items", destination: "Item", inverse: "tags", isToMany: true)
                ])
        ])
        try withMigrationStore(v1, at: url, options: tracking) { context in
            let red = try insertObject(context, "Tag", ["name": "red"])
            let blue = try insertObject(context, "Tag", ["name": "blue"])
            try insertObject(context, "Item", ["name": "cup"]).relate("tags", to: [red, blue])
            try insertObject(context, "Item", ["name": "pot"]).relate("tags", to: [red])
            try context.save()
        }
        let v2 = try ManagedObjectModel(entities: [
            EntityDescription(
                name: "Thing",
                properties: [
                    AttributeDescription(name: "name", type: .string),
                    RelationshipDescription(
                        name: "labels", destination: "Label", inverse: "things", isToMany: true, renamingIdentifier: "tags")
                ], renamingIdentifier: "Item"),
            EntityDescription(
                name: "Label",
                properties: [
                    AttributeDescription(name: "name", type: .string),
                    RelationshipDescription(
                        name: "things", destination: "Thing", inverse: "labels", isToMany: true, renamingIdentifier: "items")
                ], renamingIdentifier: "Tag")
        ])
        let coordinator = PersistentStoreCoordinator(managedObjectModel: v2)
        let store = try coordinator.addPersistentStore(type: type, at: url, options: tracking)
        defer { try? coordinator.remove(store) }
        let context = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: coordinator)
        try context.performAndWait {
            let things = try fetchByName(context, "Thing")
            #expect(things.map { $0.related("labels").map(\.nameValue).sorted() } == [["blue", "red"], ["red"]])
            let labels = try fetchByName(context, "Label")
            #expect(labels.map { $0.related("things").map(\.nameValue).sorted() } == [["cup"], ["cup", "pot"]])
        }
        let history = try coordinator.execute(PersistentHistoryChangeRequest.fetchHistory(after: nil)).transactions
        let changes = history.first?.changes ?? []
        #expect(Set(changes.map { $0.changedObjectID.entity.name }) == ["Thing", "Label"])
    }
}
