import Foundation
import Testing
@testable import Coherence
@testable import CoherenceBase
@testable import CoherenceContext
@testable import CoherenceSQLite
@testable import CoherenceStore

/// Reloading an object while keeping its unsaved changes (`refresh(_:mergeChanges: true)`,
/// `refreshAllObjects()`, a merged save) keeps the edits of its loaded to-many relationships:
/// they were dropped, and a many-to-many edit was then neither shown nor saved.
@Suite("Unsaved to-many edits survive reloads")
struct UnsavedToManyEditsTests {
    @Test(arguments: PostgreSQLTestServer.storeTypes)
    func refreshMergingChangesKeepsThem(_ type: StoreType) throws {
        let dir = try TemporaryDirectory()
        let context = try SavedPeople.context(dir, type)
        let id = try context.performAndWait {
            let chess = Club(context: context)
            chess.title = "Chess"
            let go = Club(context: context)
            go.title = "Go"
            let zed = try SavedPeople.person("zed", in: context)
            zed.clubs = [go]
            try context.save()
            // Loaded, then one member added and one removed.
            #expect(zed.clubs.map(\.title) == ["Go"])
            zed.clubs.insert(chess)
            zed.clubs.remove(go)
            #expect(zed.hasChanges)
            context.refresh(zed, mergeChanges: true)
            #expect(zed.clubs.map(\.title) == ["Chess"])
            #expect(chess.members.map(\.name) == ["zed"] && go.members.isEmpty)
            #expect(zed.hasChanges)
            context.refreshAllObjects()
            #expect(zed.clubs.map(\.title) == ["Chess"])
            #expect(chess.members.map(\.name) == ["zed"] && go.members.isEmpty)
            try context.save()
            return zed.objectID
        }
        let reader = try SavedPeople.reader(context)
        try reader.performAndWait {
            let zed = try #require(try reader.existingObject(with: id) as? Person)
            #expect(zed.clubs.map(\.title) == ["Chess"])
            #expect(try reader.fetch(FetchRequest<Club>(predicate: #Predicate { $0.title == "Go" })).first?.members.isEmpty == true)
        }
    }

    @Test(arguments: PostgreSQLTestServer.storeTypes)
    func aMergedSaveKeepsThem(_ type: StoreType) throws {
        let dir = try TemporaryDirectory()
        let context = try SavedPeople.context(dir, type)
        let other = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: context.persistentStoreCoordinator)
        let saved = LockedValue<Notification?>(nil)
        let token = NotificationCenter.default.addObserver(forName: ManagedObjectContext.didSaveNotification, object: other, queue: nil) {
            note in saved.withLock { $0 = note }
        }
        defer { NotificationCenter.default.removeObserver(token) }
        let id = try context.performAndWait {
            let chess = Club(context: context)
            chess.title = "Chess"
            try context.save()
            let zed = try SavedPeople.person("zed", in: context)
            #expect(zed.clubs.isEmpty)
            zed.clubs.insert(chess)
            return zed.objectID
        }
        // Another context changes zed (and adds a club of its own); this context merges that.
        try other.performAndWait {
            let zed = try #require(try other.existingObject(with: id) as? Person)
            zed.age = 99
            let go = Club(context: other)
            go.title = "Go"
            zed.clubs.insert(go)
            try other.save()
        }
        let note = try #require(saved.withLock { $0 })
        try context.performAndWait {
            context.mergeChanges(fromContextDidSave: note)
            let zed = try #require(context.registeredObject(for: id) as? Person)
            #expect(zed.age == 99)
            #expect(zed.clubs.map(\.title).sorted() == ["Chess", "Go"])
            try context.save()
        }
        let reader = try SavedPeople.reader(context)
        try reader.performAndWait {
            let zed = try #require(try reader.existingObject(with: id) as? Person)
            #expect(zed.clubs.map(\.title).sorted() == ["Chess", "Go"])
            #expect(zed.age == 99)
        }
    }
}
