import Foundation
import Testing
@testable import Coherence
@testable import CoherenceBase
@testable import CoherenceContext
@testable import CoherenceStore

/// What identifies a store and its objects outlives a migration: the store's UUID, object URIs,
/// and keys never handed out twice.
@Suite("Migrations: store and object identity")
struct MigrationIdentityTests {
    /// The store's UUID and object URIs outlive a migration (inferred or staged).
    @Test(arguments: storedTypes, [false, true])
    func storeIdentityAndURIsSurvive(_ type: StoreType, _ staged: Bool) throws {
        let dir = try TemporaryDirectory()
        let url = try migrationStoreURL(type, dir, "uuid")
        try MigrationTests.fill(url)
        let (uuid, uri) = try withMigrationStore(try MigrationTests.v1(), at: url) { context in
            let ada = try #require(try fetchByName(context, "Person").first)
            return (try #require(ada.objectID.storeIdentifier), ada.objectID.uriRepresentation())
        }
        let v2 = try ManagedObjectModel(entities: [
            EntityDescription(name: "Aardvark", properties: [AttributeDescription(name: "name", type: .string, isOptional: true)]),
            MigrationTests.person(adding: [AttributeDescription(name: "email", type: .string, isOptional: true)]),
            MigrationTests.town()
        ])
        let options =
            staged
            ? StoreOptions(stagedMigrationManager: StagedMigrationManager([LightweightMigrationStage([try MigrationTests.v1(), v2])]))
            : StoreOptions()
        let coordinator = PersistentStoreCoordinator(managedObjectModel: v2)
        let store = try coordinator.addPersistentStore(type: type, at: url, options: options)
        defer { try? coordinator.remove(store) }
        #expect(store.identifier == uuid)
        let id = try #require(coordinator.managedObjectID(forURIRepresentation: uri))
        let context = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: coordinator)
        let name = try context.performAndWait { () throws -> String in try context.existingObject(with: id).nameValue }
        #expect(name == "Ada")
    }

    /// Keys handed out before (and deleted) are not handed out again after a migration that
    /// rebuilds the table.
    @Test(arguments: storedTypes)
    func deletedKeysAreNotReusedAfterARebuild(_ type: StoreType) throws {
        let dir = try TemporaryDirectory()
        let url = try migrationStoreURL(type, dir, "keys")
        try MigrationTests.fill(url)
        let uri = try withMigrationStore(try MigrationTests.v1(), at: url) { context in
            let cy = try #require(try fetchByName(context, "Person").last)
            let uri = cy.objectID.uriRepresentation()
            context.delete(cy)
            try context.save()
            return uri
        }
        let v2 = try ManagedObjectModel(entities: [
            EntityDescription(
                name: "Human",
                properties: [
                    AttributeDescription(name: "name", type: .string),
                    AttributeDescription(name: "age", type: .integer64, defaultValue: Int64(0)),
                    RelationshipDescription(name: "town", destination: "Town", inverse: "people")
                ], renamingIdentifier: "Person"),
            EntityDescription(
                name: "Town",
                properties: [
                    AttributeDescription(name: "name", type: .string),
                    RelationshipDescription(name: "people", destination: "Human", inverse: "town", isToMany: true)
                ])
        ])
        let newURI = try withMigrationStore(v2, at: url) { context in
            let dee = try insertObject(context, "Human", ["name": "Dee"])
            try context.save()
            return dee.objectID.uriRepresentation()
        }
        #expect(newURI.lastPathComponent != uri.lastPathComponent)
    }
}
