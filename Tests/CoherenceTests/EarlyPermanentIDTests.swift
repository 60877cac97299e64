import Foundation
import Testing
@testable import Coherence
@testable import CoherenceBase
@testable import CoherenceContext
@testable import CoherenceSQLite
@testable import CoherenceStore

/// A permanent ID handed to another context before its object's save (`obtainPermanentIDs`)
/// and touched there early names no row yet: the object is inaccessible. Once the save is done,
/// `existingObject(with:)` finds the row (it kept reporting "was deleted"), and a merge that
/// announces the insert makes the object a fault again (it kept its default values).
@Suite("Permanent IDs touched before their save")
struct EarlyPermanentIDTests {
    /// `existingObject(with:)` reads the row again.
    @Test(arguments: PostgreSQLTestServer.storeTypes)
    func existingObjectFindsTheSavedRow(_ type: StoreType) throws {
        let dir = try TemporaryDirectory()
        let context = try SavedPeople.context(dir, type)
        let other = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: context.persistentStoreCoordinator)
        let note = LockedValue<Notification?>(nil)
        let token = NotificationCenter.default.addObserver(forName: ManagedObjectContext.didSaveNotification, object: context, queue: nil) {
            n in
            note.withLock { $0 = n }
        }
        defer { NotificationCenter.default.removeObserver(token) }
        let id = try context.performAndWait {
            let p = Person(context: context)
            p.name = "early"
            try context.obtainPermanentIDs(for: [p])
            return p.objectID
        }
        other.performAndWait {
            let o = other.object(with: id)
            #expect(throws: CoherenceError.self) { try o.fulfillFault() }
        }
        try context.performAndWait { try context.save() }
        let n = try #require(note.withLock { $0 })
        try other.performAndWait {
            let o = try other.existingObject(with: id)
            #expect((o as? Person)?.name == "early")
            other.mergeChanges(fromContextDidSave: n)
            #expect((o as? Person)?.name == "early")
        }
    }

    /// A merge announcing the insert makes the object a fault that reads the row.
    @Test(arguments: PostgreSQLTestServer.storeTypes)
    func aMergedInsertMakesItAFaultAgain(_ type: StoreType) throws {
        let dir = try TemporaryDirectory()
        let context = try SavedPeople.context(dir, type)
        let other = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: context.persistentStoreCoordinator)
        let note = LockedValue<Notification?>(nil)
        let token = NotificationCenter.default.addObserver(forName: ManagedObjectContext.didSaveNotification, object: context, queue: nil) {
            n in
            note.withLock { $0 = n }
        }
        defer { NotificationCenter.default.removeObserver(token) }
        let id = try context.performAndWait {
            let p = Person(context: context)
            p.name = "early"
            try context.obtainPermanentIDs(for: [p])
            return p.objectID
        }
        other.performAndWait {
            let o = other.object(with: id) as? Person
            #expect(o?.name == "")
        }
        try context.performAndWait { try context.save() }
        let n = try #require(note.withLock { $0 })
        other.performAndWait {
            other.mergeChanges(fromContextDidSave: n)
            let o = other.object(with: id) as? Person
            #expect(o?.name == "early")
            #expect(o?.isFault == false)
        }
    }
}
