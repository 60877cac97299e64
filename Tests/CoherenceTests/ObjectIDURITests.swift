import Foundation
import Testing
@testable import Coherence
@testable import CoherenceBase
@testable import CoherenceContext
@testable import CoherenceSQLite
@testable import CoherenceStore

@Suite("Object ID URIs")
struct ObjectIDURITests {
    /// An entity name that needs escaping (a space, "%", "/", "?", "#", letters outside ASCII)
    /// comes back from its URI: the path was decoded twice, so "100%" gave no ID, "a/b" gave
    /// none, and "x%41" was read as "xA".
    @Test(arguments: PostgreSQLTestServer.storeTypes)
    func entityNamesThatNeedEscapingRoundTrip(_ type: StoreType) throws {
        let dir = try TemporaryDirectory()
        let names = ["My Entity", "100%", "x%41", "xA", "Ünï", "a?b", "c#d", "a/b"]
        let model = try ManagedObjectModel(
            entities: names.map { EntityDescription(name: $0, properties: [AttributeDescription(name: "v", type: .string)]) })
        let coordinator = PersistentStoreCoordinator(managedObjectModel: model)
        try coordinator.addPersistentStore(type: type, at: try dir.storeURL(type))
        for name in names {
            let entity = try #require(model.entitiesByName[name])
            let id = try #require(try insertObjects(coordinator, [rowInsert(entity, ["v": .text(name)])]).first)
            let uri = id.uriRepresentation()
            let back = coordinator.managedObjectID(forURIRepresentation: uri)
            #expect(back == id, "\(name): \(uri)")
            #expect(back?.entity.name == name, "\(name): \(uri)")
        }
    }

    /// Malformed URIs, URIs of other stores, of entities the model lacks and of rows that are
    /// gone give nil or a typed error, never a crash or another object.
    @Test(arguments: PostgreSQLTestServer.storeTypes)
    func malformedForeignAndStaleURIs(_ type: StoreType) throws {
        let dir = try TemporaryDirectory()
        let context = try SavedPeople.context(dir, type)
        let coordinator = context.persistentStoreCoordinator
        let store = try #require(coordinator.persistentStores.first)
        let u = store.identifier.uuidString
        try context.performAndWait {
            let zed = try SavedPeople.person("zed", in: context)
            #expect(coordinator.managedObjectID(forURIRepresentation: zed.objectID.uriRepresentation()) == zed.objectID)
            for text in [
                "x-coredata://\(u)/Person/q1", "x-coredata://\(u)/Person/p", "x-coredata://\(u)/Person/p1/x",
                "x-coredata://\(u)/Nope/p1", "x-coredata://\(UUID().uuidString)/Person/p1", "x-coredata://nope/Person/p1",
                "http://\(u)/Person/p1", "x-coredata:///Person/t1", "x-coredata://\(u)/Person/p99999999999999999999",
                "x-coredata://\(u)//p1", "x-coredata://\(u)", "x-coredata:"
            ] {
                let uri = try #require(URL(string: text))
                #expect(coordinator.managedObjectID(forURIRepresentation: uri) == nil, "\(text)")
                #expect(throws: CoherenceError.self) { try TypedObjectID<Person>(uriRepresentation: uri, coordinator: coordinator) }
            }
            // A temporary ID's URI names no stored object.
            #expect(coordinator.managedObjectID(forURIRepresentation: Person(context: context).objectID.uriRepresentation()) == nil)
            context.rollback()
            // A row that is gone: an ID, whose object cannot be loaded.
            let ghostURI = try #require(URL(string: "x-coredata://\(u)/Person/p987654"))
            let ghost = try #require(coordinator.managedObjectID(forURIRepresentation: ghostURI))
            #expect(throws: CoherenceError.self) { try context.existingObject(with: ghost) }
            #expect(throws: CoherenceError.self) { try context.object(with: ghost).fulfillFault() }
            // A Town URI with a person's key: no Town exists with it.
            let mixedURI = try #require(URL(string: "x-coredata://\(u)/Town/p\(zed.objectID.primaryKey + 100)"))
            let mixed = try #require(coordinator.managedObjectID(forURIRepresentation: mixedURI))
            #expect(throws: CoherenceError.self) { try context.existingObject(with: mixed) }
            // A Person URI as a TypedObjectID<Town>: a type mismatch.
            do {
                _ = try TypedObjectID<Town>(uriRepresentation: zed.objectID.uriRepresentation(), coordinator: coordinator)
                Issue.record("no error")
            } catch {
                #expect((error as? CoherenceError)?.code == .typeMismatch)
            }
        }
        // A store that was removed: its URIs name nothing.
        let uri = try context.performAndWait { try SavedPeople.person("zed", in: context).objectID.uriRepresentation() }
        try coordinator.remove(store)
        #expect(coordinator.managedObjectID(forURIRepresentation: uri) == nil)
    }

    /// A URI naming an entity that its store's configuration does not hold names no object:
    /// `existingObject(with:)` throws `.objectNotFound` and the fault is gone, instead of a
    /// `.storeReadFailed` ("no such table") that left the fault unreadable, retried for ever.
    @Test(arguments: PostgreSQLTestServer.storeTypes)
    func aURIOfAnEntityTheStoreDoesNotHold(_ type: StoreType) throws {
        let dir = try TemporaryDirectory()
        let model = try ManagedObjectModel(types: [Person.self, Town.self, Club.self], configurations: ["Clubs": ["Club"]])
        let coordinator = PersistentStoreCoordinator(managedObjectModel: model)
        let clubs = try coordinator.addPersistentStore(type: type, configuration: "Clubs", at: try dir.storeURL(type))
        let context = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: coordinator)
        let uri = try #require(URL(string: "x-coredata://\(clubs.identifier.uuidString)/Person/p1"))
        try context.performAndWait {
            let club = Club(context: context)
            club.title = "chess"
            try context.save()
            guard let id = coordinator.managedObjectID(forURIRepresentation: uri) else { return }
            do {
                _ = try context.existingObject(with: id)
                Issue.record("no error")
            } catch let error as CoherenceError {
                #expect(error.code == .objectNotFound, "\(error)")
            }
            let fault = context.object(with: id)
            do {
                try fault.fulfillFault()
                Issue.record("no error")
            } catch let error as CoherenceError {
                #expect(error.code == .objectNotFound, "\(error)")
            }
            #expect(!context.hasChanges)
            #expect(try context.fetch(FetchRequest<Club>()).map(\.title) == ["chess"])
        }
    }
}
