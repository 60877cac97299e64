import Foundation
import Testing
@testable import Coherence
@testable import CoherenceBase
@testable import CoherenceContext
@testable import CoherenceSQLite
@testable import CoherenceStore

/// `mergeChanges(fromContextDidSave:)` with a did-save notification made by hand, its changes
/// under Core Data's keys of objects (`"updated"`, …) rather than of IDs: it merged nothing.
@Suite("Merging a hand-made did-save notification")
struct HandMadeDidSaveNotificationTests {
    @Test(arguments: PostgreSQLTestServer.storeTypes)
    func objectsUnderCoreDataKeysAreMerged(_ type: StoreType) throws {
        let dir = try TemporaryDirectory()
        let context = try SavedPeople.context(dir, type)
        let other = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: context.persistentStoreCoordinator)
        let (zedID, appleID) = try context.performAndWait {
            let zed = try SavedPeople.person("zed", in: context)
            let apple = try SavedPeople.person("apple", in: context)
            #expect(zed.age == 0 && !apple.isDeleted)
            return (zed.objectID, apple.objectID)
        }
        try other.performAndWait {
            let zed = try #require(try other.existingObject(with: zedID) as? Person)
            zed.age = 42
            let apple = try other.existingObject(with: appleID)
            other.delete(apple)
            try other.save()
            // A set of objects under one key, an array under the other.
            let note = Notification(
                name: ManagedObjectContext.didSaveNotification, object: other,
                userInfo: [
                    ManagedObjectContext.NotificationKey.updatedObjects: Set<ManagedObject>([zed]),
                    ManagedObjectContext.NotificationKey.deletedObjects: [apple]
                ])
            try context.performAndWait {
                context.mergeChanges(fromContextDidSave: note)
                let merged = try #require(context.registeredObject(for: zedID) as? Person)
                #expect(merged.age == 42)
                #expect(context.registeredObject(for: appleID) == nil)
                #expect(!context.hasChanges)
            }
        }
    }

    /// A hand-made notification may describe a save through another coordinator (another
    /// process, a history reader): the coordinator's cached rows of the objects it lists are
    /// read again, as `mergeChanges(fromRemoteContextSave:into:)` reads them (the merged object
    /// kept the cached, older values).
    @Test func objectsSavedThroughAnotherCoordinatorAreReadAgain() throws {
        let dir = try TemporaryDirectory()
        let context = try SavedPeople.context(dir, .sqlite)
        let other = try reopen(context.persistentStoreCoordinator)
        let writer = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: other)
        let zedID = try context.performAndWait { try SavedPeople.person("zed", in: context).objectID }
        // Read by ID in a new context: the coordinator caches the row.
        let viewer = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: context.persistentStoreCoordinator)
        #expect(try viewer.performAndWait { try #require(try viewer.existingObject(with: zedID) as? Person).age } == 0)
        let updated: Set<ObjectID> = try writer.performAndWait {
            let zed = try #require(try writer.existingObject(with: zedID) as? Person)
            zed.age = 42
            try writer.save()
            return [zed.objectID]
        }
        let note = Notification(
            name: ManagedObjectContext.didSaveNotification, object: nil,
            userInfo: [ManagedObjectContext.NotificationKey.updatedObjectIDs: updated])
        try viewer.performAndWait {
            viewer.mergeChanges(fromContextDidSave: note)
            let merged = try #require(viewer.registeredObject(for: zedID) as? Person)
            #expect(merged.age == 42)
        }
        // A new context of the first coordinator reads the saved value too.
        let reader = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: context.persistentStoreCoordinator)
        #expect(try reader.performAndWait { try SavedPeople.person("zed", in: reader).age } == 42)
    }
}
