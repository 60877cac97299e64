import Foundation
import Testing
@testable import Coherence
@testable import CoherenceBase
@testable import CoherenceContext
@testable import CoherenceStore

/// `automaticallyMergesChangesFromParent` as Core Data does it: a child context always fetches
/// through its parent, but its registered objects are refreshed only when it merges.
@Suite struct AutomaticMergeTests {
    @Test(arguments: PostgreSQLTestServer.storeTypes)
    func aChildFetchesItsParentsSavesButRefreshesOnlyWhenItMerges(_ type: StoreType) throws {
        let dir = try TemporaryDirectory()
        let coordinator = try makeCoordinator(type, in: dir)
        let parent = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: coordinator, name: "parent")
        let ada = try parent.performAndWait { () throws -> Person in
            let ada = Person(context: parent)
            ada.name = "Ada"
            ada.age = 30
            try parent.save()
            return ada
        }
        let adaID = parent.performAndWait { ada.objectID }
        let child = ManagedObjectContext(concurrencyType: .privateQueue, parent: parent, name: "child")
        #expect(!child.automaticallyMergesChangesFromParent)
        let registered = try child.performAndWait { () throws -> Person in
            try #require(child.existingObject(with: adaID) as? Person)
        }
        #expect(child.performAndWait { registered.age } == 30)

        // The parent changes Ada, inserts Bob and saves.
        let bobID = try parent.performAndWait { () throws -> ObjectID in
            ada.age = 31
            let bob = Person(context: parent)
            bob.name = "Bob"
            try parent.save()
            return bob.objectID
        }
        try child.performAndWait { () throws in
            // A fetch reads through the parent: Bob is there, and Ada matches on her new age…
            let bob = try child.fetch(FetchRequest<Person>(predicate: #Predicate { $0.name == "Bob" }))
            #expect(bob.map(\.objectID) == [bobID])
            let matching = try child.fetch(FetchRequest<Person>(predicate: #Predicate { $0.age == 31 }))
            #expect(matching.count == 1 && matching.first === registered)
            // …but the object the child had registered keeps the values it loaded.
            #expect(registered.age == 30)
        }

        // With the flag on, the parent's next save refreshes it; inserts are announced by ID,
        // and objects the child never registered stay unregistered.
        child.automaticallyMergesChangesFromParent = true
        let changes = LockedValue<[ContextEvent]>([])
        let token = NotificationCenter.default.addObserver(
            forName: ManagedObjectContext.objectsDidChangeNotification, object: child, queue: nil
        ) { note in
            if let e = note.userInfo?[ManagedObjectContext.NotificationKey.event] as? ContextEvent { changes.withLock { $0.append(e) } }
        }
        defer { NotificationCenter.default.removeObserver(token) }
        let cyID = try parent.performAndWait { () throws -> ObjectID in
            ada.age = 32
            (parent.registeredObject(for: bobID) as? Person)?.age = 40
            let cy = Person(context: parent)
            cy.name = "Cy"
            try parent.save()
            return cy.objectID
        }
        child.performAndWait {
            #expect(registered.age == 32)
            #expect(child.registeredObject(for: bobID)?.isFault ?? true)
            #expect(child.registeredObject(for: cyID) == nil)
        }
        let merged = changes.withLock { $0 }
        #expect(merged.contains { $0.inserted.contains(cyID) })
        #expect(merged.contains { $0.updated.contains(adaID) })
    }

    @Test func aRootContextMergesSavesOfOtherContextsOnItsCoordinatorOnly() throws {
        let dir = try TemporaryDirectory()
        let url = dir.file("store.sqlite")
        let coordinator = try makeCoordinator(.sqlite, in: dir)
        let view = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: coordinator, name: "view")
        view.automaticallyMergesChangesFromParent = true
        let writer = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: coordinator, name: "writer")
        let (id, bobID) = try writer.performAndWait { () throws -> (ObjectID, ObjectID) in
            let p = Person(context: writer)
            p.name = "Ada"
            let bob = Person(context: writer)
            bob.name = "Bob"
            try writer.save()
            return (p.objectID, bob.objectID)
        }
        let (seen, seenBob) = try view.performAndWait { () throws -> (Person, Person) in
            (try #require(view.existingObject(with: id) as? Person), try #require(view.existingObject(with: bobID) as? Person))
        }
        // Another coordinator on the same file: not merged automatically.
        let other = PersistentStoreCoordinator(managedObjectModel: coordinator.managedObjectModel)
        try other.addPersistentStore(type: .sqlite, at: url)
        let elsewhere = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: other, name: "elsewhere")
        try elsewhere.performAndWait {
            try #require(elsewhere.existingObject(with: id) as? Person).name = "Ada (other coordinator)"
            try elsewhere.save()
        }
        // A context of the same coordinator: merged.
        try writer.performAndWait {
            try #require(writer.existingObject(with: bobID) as? Person).age = 36
            try writer.save()
        }
        view.performAndWait {
            #expect(seenBob.age == 36)
            #expect(seen.name == "Ada")
        }
    }
}
