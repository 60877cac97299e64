import Foundation
import Testing
@testable import Coherence
@testable import CoherenceBase
@testable import CoherenceContext
@testable import CoherenceStore

/// Staged migrations of stores added with a configuration of the model.
@Suite("Migrations: staged, stores of a configuration")
struct StagedMigrationConfigurationTests {
    /// The model of `entities` (configuration "Main") and a Note (configuration "Notes").
    static func withConfig(_ entities: [EntityDescription]) throws -> ManagedObjectModel {
        let note = EntityDescription(name: "Note", properties: [AttributeDescription(name: "text", type: .string, isOptional: true)])
        return try ManagedObjectModel(entities: entities + [note], configurations: ["Main": entities.map(\.name), "Notes": ["Note"]])
    }

    /// A store of a configuration other than the whole model's: its version is that of the
    /// configuration's entities, and the custom stage from it runs.
    @Test(arguments: storedTypes)
    func aCustomStageRunsOnAStoreOfAConfiguration(_ type: StoreType) throws {
        let dir = try TemporaryDirectory()
        let url = try migrationStoreURL(type, dir, "cfg")
        let v1 = try Self.withConfig([
            EntityDescription(name: "Student", properties: [AttributeDescription(name: "data", type: .binaryData, isOptional: true)])
        ])
        let v2 = try Self.withConfig([
            EntityDescription(
                name: "Student",
                properties: [
                    AttributeDescription(name: "data", type: .binaryData, isOptional: true),
                    AttributeDescription(name: "name", type: .string, isOptional: true)
                ])
        ])
        do {
            let c = PersistentStoreCoordinator(managedObjectModel: v1)
            let s = try c.addPersistentStore(type: type, configuration: "Main", at: url)
            let context = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: c)
            try context.performAndWait { () throws in
                try insertObject(context, "Student", ["data": try JSONEncoder().encode(StagedMigrationTests.Payload(name: "Ann", age: 3))])
                try context.save()
            }
            try c.remove(s)
        }
        var stage = CustomMigrationStage(migratingFrom: v1, to: v2, label: "decode")
        stage.didMigrateHandler = { context in
            for student in try context.fetch(FetchRequest<ManagedObject>(entityName: "Student")) {
                let payload = try JSONDecoder().decode(
                    StagedMigrationTests.Payload.self, from: try student.value(forKey: "data") as? Data ?? Data())
                try student.setValue(payload.name, forKey: "name")
            }
        }
        let c = PersistentStoreCoordinator(managedObjectModel: v2)
        let s = try c.addPersistentStore(
            type: type, configuration: "Main", at: url, options: StoreOptions(stagedMigrationManager: StagedMigrationManager([stage])))
        defer { try? c.remove(s) }
        let context = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: c)
        let names = try context.performAndWait { () throws -> [String?] in
            try context.fetch(FetchRequest<ManagedObject>(entityName: "Student")).map { try $0.value(forKey: "name") as? String }
        }
        #expect(names == ["Ann"])
        // The store holds the configuration's entities, at the new version.
        let metadata = try PersistentStoreCoordinator.metadataForPersistentStore(type: type, at: url)
        #expect(v2.isConfiguration(withName: "Main", compatibleWithStoreMetadata: metadata))
    }
}
