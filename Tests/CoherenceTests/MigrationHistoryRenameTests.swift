import Foundation
import Testing
@testable import Coherence
@testable import CoherenceContext
@testable import CoherencePostgreSQL
@testable import CoherenceStore

/// Persistent history written before a migration that renames and removes entities and
/// properties reads with the new model: changes name the new entities and properties, those of
/// removed entities and properties are left out, and the transactions keep their tokens.
@Suite("Migrations rename persistent history")
struct MigrationHistoryRenameTests {
    static func v1() throws -> ManagedObjectModel {
        try ManagedObjectModel(entities: [
            EntityDescription(
                name: "Person",
                properties: [
                    AttributeDescription(
                        name: "name", type: .string, preservesValueInHistoryOnDeletion: true, recordsValuesInHistory: true),
                    AttributeDescription(name: "age", type: .integer16, defaultValue: Int16(0), recordsValuesInHistory: true)
                ]),
            EntityDescription(name: "Town", properties: [AttributeDescription(name: "name", type: .string)]),
            EntityDescription(name: "Note", properties: [AttributeDescription(name: "text", type: .string)])
        ])
    }

    /// Person → Human with `name` → `fullName` and `age` removed; Town → City; Note removed.
    static func v2() throws -> ManagedObjectModel {
        try ManagedObjectModel(entities: [
            EntityDescription(
                name: "Human",
                properties: [
                    AttributeDescription(
                        name: "fullName", type: .string, preservesValueInHistoryOnDeletion: true, recordsValuesInHistory: true,
                        renamingIdentifier: "name")
                ], renamingIdentifier: "Person"),
            EntityDescription(name: "City", properties: [AttributeDescription(name: "name", type: .string)], renamingIdentifier: "Town")
        ])
    }

    /// Four saves: Ada, Oslo and a note inserted; Ada renamed and aged and the note changed; Ada
    /// deleted; a note inserted. Returns the tokens.
    static func fill(_ url: URL) throws -> [PersistentHistoryToken] {
        let coordinator = PersistentStoreCoordinator(managedObjectModel: try v1())
        let store = try coordinator.addPersistentStore(
            type: migrationStoreType(url), at: url, options: StoreOptions(persistentHistoryTracking: true))
        defer { try? coordinator.remove(store) }
        let context = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: coordinator)
        try context.performAndWait {
            let ada = try insertObject(context, "Person", ["name": "Ada", "age": Int16(36)])
            try insertObject(context, "Town", ["name": "Oslo"])
            let note = try insertObject(context, "Note", ["text": "a"])
            try context.save()
            try ada.setValue("Ada L", forKey: "name")
            try ada.setValue(Int16(37), forKey: "age")
            try note.setValue("b", forKey: "text")
            try context.save()
            context.delete(ada)
            try context.save()
            try insertObject(context, "Note", ["text": "c"])
            try context.save()
        }
        return try coordinator.execute(PersistentHistoryChangeRequest.fetchHistory(after: nil)).transactions.map(\.token)
    }

    @Test(arguments: storedTypes, MigrationHistoryTests.Way.allCases)
    func renamedAndRemovedEntitiesAndPropertiesReadWithTheNewModel(_ type: StoreType, _ way: MigrationHistoryTests.Way) throws {
        let dir = try TemporaryDirectory()
        let url = try migrationStoreURL(type, dir, "h")
        let tokens = try Self.fill(url)
        #expect(tokens.count == 4)
        let coordinator = PersistentStoreCoordinator(managedObjectModel: try Self.v2())
        let options = StoreOptions(
            persistentHistoryTracking: true,
            stagedMigrationManager: way == .staged
                ? StagedMigrationManager([LightweightMigrationStage([try Self.v1(), try Self.v2()])]) : nil)
        let store = try coordinator.addPersistentStore(type: type, at: url, options: options)
        defer { try? coordinator.remove(store) }

        let history = try coordinator.execute(PersistentHistoryChangeRequest.fetchHistory(after: nil)).transactions
        #expect(history.map(\.token) == tokens)
        func changes(_ i: Int) -> [PersistentHistoryChange] {
            (history.count > i ? history[i].changes ?? [] : []).sorted { $0.changedObjectID.entity.name < $1.changedObjectID.entity.name }
        }
        // The note's changes are left out; Person and Town are Human and City.
        #expect(changes(0).map(\.changedObjectID.entity.name) == ["City", "Human"])
        #expect(changes(0).map(\.changeType) == [.insert, .insert])
        // The update names the renamed attribute only (age was removed), with its values.
        let update = changes(1)
        #expect(update.map(\.changedObjectID.entity.name) == ["Human"])
        #expect(update.first?.updatedProperties == ["fullName"])
        #expect(update.first?.oldValues == ["fullName": .text("Ada")])
        #expect(update.first?.newValues == ["fullName": .text("Ada L")])
        #expect(changes(2).first?.changeType == .delete)
        #expect(changes(2).first?.tombstone == ["fullName": .text("Ada L")])
        #expect(changes(3).isEmpty)
        // The same object as the migrated row.
        #expect(changes(0).last?.changedObjectID.primaryKey == update.first?.changedObjectID.primaryKey)

        // Fetching by the new entity name finds its transactions.
        var byEntity = PersistentHistoryChangeRequest.fetchHistory(after: nil)
        byEntity.entityNames = ["Human"]
        #expect(try coordinator.execute(byEntity).transactions.map(\.token) == Array(tokens.prefix(3)))

        // History goes on.
        let context = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: coordinator)
        try context.performAndWait {
            try insertObject(context, "Human", ["fullName": "Bo"])
            try context.save()
        }
        let after = try coordinator.execute(PersistentHistoryChangeRequest.fetchHistory(after: tokens[3])).transactions
        #expect(after.map(\.token.transactionNumber) == [tokens[3].transactionNumber + 1])
    }
}
