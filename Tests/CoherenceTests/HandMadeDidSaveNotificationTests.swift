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
}
