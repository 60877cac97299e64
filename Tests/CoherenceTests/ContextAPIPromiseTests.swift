import Foundation
import Testing
@testable import Coherence
@testable import CoherenceBase
@testable import CoherenceContext
@testable import CoherenceSQLite
@testable import CoherenceStore

/// Promises of the context API that Core Data users rely on, checked against every store:
/// merges across coordinators, pending relationship changes in fetches, counts that agree with
/// fetches, IDs made permanent early, saves without changes and objects whose delete was saved.
@Suite("Context API promises")
struct ContextAPIPromiseTests {
    /// Merging the did-save of a context of another coordinator on the same store reloads the
    /// loaded objects it changed (not from this coordinator's cached rows).
    @Test(arguments: storedTypes)
    func mergeFromAnotherCoordinator(_ type: StoreType) throws {
        let dir = try TemporaryDirectory()
        let context = try SavedPeople.context(dir, type)
        let otherCoordinator = try reopen(context.persistentStoreCoordinator)
        let other = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: otherCoordinator)
        let note = LockedValue<Notification?>(nil)
        let token = NotificationCenter.default.addObserver(forName: ManagedObjectContext.didSaveNotification, object: other, queue: nil) {
            n in
            note.withLock { $0 = n }
        }
        defer { NotificationCenter.default.removeObserver(token) }
        let (zedID, appleID) = try context.performAndWait {
            let zed = try SavedPeople.person("zed", in: context)
            _ = zed.age
            let apple = try SavedPeople.person("apple", in: context)
            return (zed.objectID, apple.objectID)
        }
        try other.performAndWait {
            let zed = try other.existingObject(with: zedID) as! Person
            zed.age = 77
            let apple = try other.existingObject(with: appleID) as! Person
            apple.age = 66
            try other.save()
        }
        let n = try #require(note.withLock { $0 })
        try context.performAndWait {
            context.mergeChanges(fromContextDidSave: n)
            let zed = try #require(context.registeredObject(for: zedID) as? Person)
            #expect(zed.age == 77)
            let apple = try #require(context.registeredObject(for: appleID) as? Person)
            #expect(apple.age == 66)
        }
    }

    /// A relationship changed from the to-many side (`oslo.people.insert(zed)`) is matched in
    /// memory by fetches and counts through the to-one side.
    @Test(arguments: PostgreSQLTestServer.storeTypes)
    func pendingInverseToManyChange(_ type: StoreType) throws {
        let dir = try TemporaryDirectory()
        let context = try SavedPeople.context(dir, type)
        try context.performAndWait {
            let zed = try SavedPeople.person("zed", in: context)
            let oslo = try context.fetch(FetchRequest<Town>(predicate: #Predicate { $0.name == "Oslo" }))[0]
            oslo.people.insert(zed)
            #expect(zed.town === oslo)
            #expect(context.updatedObjects.contains(zed))
            let inOslo = try context.fetch(FetchRequest<Person>(predicate: #Predicate { $0.town?.name == "Oslo" }))
            #expect(inOslo.contains(zed))
            let inRome = try context.fetch(FetchRequest<Person>(predicate: #Predicate { $0.town?.name == "Rome" }))
            #expect(!inRome.contains(zed))
            #expect(try context.count(for: FetchRequest<Person>(predicate: #Predicate { $0.town?.name == "Rome" })) == inRome.count)
        }
    }

    /// A save without changes (nothing changed, or a value set back) posts neither WillSave
    /// nor DidSave.
    @Test func saveWithoutChangesPostsNothing() throws {
        let dir = try TemporaryDirectory()
        let context = try SavedPeople.context(dir, .sqlite)
        let count = LockedValue(0)
        let t1 = NotificationCenter.default.addObserver(forName: ManagedObjectContext.didSaveNotification, object: context, queue: nil) {
            _ in count.withLock { $0 += 1 }
        }
        let t2 = NotificationCenter.default.addObserver(forName: ManagedObjectContext.willSaveNotification, object: context, queue: nil) {
            _ in count.withLock { $0 += 1 }
        }
        defer {
            NotificationCenter.default.removeObserver(t1)
            NotificationCenter.default.removeObserver(t2)
        }
        try context.performAndWait {
            try context.save()
            let zed = try SavedPeople.person("zed", in: context)
            let old = zed.age
            zed.age = old + 1
            zed.age = old
            try context.save()
        }
        #expect(count.withLock { $0 } == 0)
    }

    /// After its delete is saved, an object is no longer registered, its ID names nothing,
    /// and the object is in no context (as in Core Data, `isDeleted` is false again).
    @Test(arguments: PostgreSQLTestServer.storeTypes)
    func deletedAndSaved(_ type: StoreType) throws {
        let dir = try TemporaryDirectory()
        let context = try SavedPeople.context(dir, type)
        try context.performAndWait {
            let zed = try SavedPeople.person("zed", in: context)
            let id = zed.objectID
            context.delete(zed)
            try context.save()
            #expect(context.registeredObject(for: id) == nil)
            #expect(throws: CoherenceError.self) { try context.existingObject(with: id) }
            #expect(!context.hasChanges)
            #expect(!zed.isDeleted && zed.managedObjectContext == nil)
            let o = context.object(with: id)
            #expect(o !== zed)
            #expect(throws: CoherenceError.self) { try o.fulfillFault() }
        }
    }

    /// A non-faulting fetch fills registered faults (refreshed ones and those of `object(with:)`).
    @Test(arguments: PostgreSQLTestServer.storeTypes)
    func nonFaultingFetchFillsRegisteredFaults(_ type: StoreType) throws {
        let dir = try TemporaryDirectory()
        let context = try SavedPeople.context(dir, type)
        try context.performAndWait {
            let zed = try SavedPeople.person("zed", in: context)
            _ = zed.age
            context.refresh(zed, mergeChanges: false)
            #expect(zed.isFault)
            var r = FetchRequest<Person>()
            r.returnsObjectsAsFaults = false
            let all = try context.fetch(r)
            #expect(all.contains(zed))
            #expect(!zed.isFault)
            let id = zed.objectID
            context.reset()
            let f = context.object(with: id)
            #expect(f.isFault)
            _ = try context.fetch(r)
            #expect(!f.isFault)
        }
    }

    /// IDs before and after `obtainPermanentIDs(for:)` are distinct dictionary keys; the
    /// object is found by its permanent ID (and no longer by its temporary one) and saved under it.
    @Test(arguments: PostgreSQLTestServer.storeTypes)
    func permanentIDsAsKeys(_ type: StoreType) throws {
        let dir = try TemporaryDirectory()
        let context = try SavedPeople.context(dir, type)
        try context.performAndWait {
            let p = Person(context: context)
            p.name = "new"
            let temp = p.objectID
            var d: [ObjectID: String] = [temp: "t"]
            try context.obtainPermanentIDs(for: [p])
            let perm = p.objectID
            #expect(perm != temp)
            d[perm] = "p"
            #expect(d.count == 2)
            #expect(context.registeredObject(for: perm) === p)
            #expect(try context.existingObject(with: perm) === p)
            #expect(context.object(with: perm) === p)
            #expect(context.registeredObject(for: temp) == nil)
            #expect(context.insertedObjects == [p])
            let fetched = try context.fetch(FetchRequest<Person>(predicate: #Predicate { $0.name == "new" }))
            #expect(fetched == [p])
            let ids = try context.fetchObjectIDs(FetchRequest<Person>(predicate: #Predicate { $0.name == "new" }))
            #expect(ids == [perm])
            try context.save()
            #expect(p.objectID == perm)
            context.reset()
            #expect((try context.existingObject(with: perm) as? Person)?.name == "new")
        }
    }

    /// Rolling back an inserted object that has a permanent ID forgets it: the ID names nothing.
    @Test(arguments: PostgreSQLTestServer.storeTypes)
    func rollbackAfterPermanentID(_ type: StoreType) throws {
        let dir = try TemporaryDirectory()
        let context = try SavedPeople.context(dir, type)
        try context.performAndWait {
            let p = Person(context: context)
            p.name = "new"
            try context.obtainPermanentIDs(for: [p])
            let perm = p.objectID
            context.rollback()
            #expect(context.registeredObject(for: perm) == nil)
            #expect(throws: CoherenceError.self) { try context.existingObject(with: perm) }
            #expect(!context.hasChanges)
            #expect(try context.fetch(FetchRequest<Person>(predicate: #Predicate { $0.name == "new" })).isEmpty)
            try context.save()
        }
    }

    /// With unsaved inserts, updates and deletes, `count(for:)` and `fetchObjectIDs(_:)` agree
    /// with `fetch(_:)` for every limit and offset, sorted or not.
    @Test(arguments: PostgreSQLTestServer.storeTypes)
    func countsAgree(_ type: StoreType) throws {
        let dir = try TemporaryDirectory()
        let context = try SavedPeople.context(dir, type)
        try context.performAndWait {
            let zed = try SavedPeople.person("zed", in: context)
            context.delete(zed)
            let n = Person(context: context)
            n.name = "nn"
            n.age = 3
            let apple = try SavedPeople.person("apple", in: context)
            apple.age = 9
            for limit in 0...4 {
                for offset in 0...3 {
                    var r = FetchRequest<Person>(
                        predicate: #Predicate { $0.age >= 1 }, sortBy: [SortDescriptor(\.age), SortDescriptor(\.name)])
                    r.fetchLimit = limit
                    r.fetchOffset = offset
                    let objs = try context.fetch(r)
                    #expect(try context.count(for: r) == objs.count, "\(limit) \(offset)")
                    #expect(try context.fetchObjectIDs(r) == objs.map(\.objectID), "\(limit) \(offset)")
                    r.sortDescriptors = []
                    #expect(try context.count(for: r) == (try context.fetch(r)).count, "\(limit) \(offset)")
                }
            }
        }
    }

    /// An object inserted again after a rollback keeps the permanent ID it had and is found by
    /// it, as one just given the ID is: `registeredObject(for:)` was nil, `existingObject(with:)`
    /// threw `.objectNotFound` and `object(with:)` made a second object for it.
    @Test(arguments: PostgreSQLTestServer.storeTypes)
    func anObjectInsertedAgainAfterARollbackIsFoundByItsID(_ type: StoreType) throws {
        let dir = try TemporaryDirectory()
        let context = try SavedPeople.context(dir, type)
        let id = try context.performAndWait {
            let p = Person(context: context)
            p.name = "again"
            try context.obtainPermanentIDs(for: [p])
            let id = p.objectID
            context.rollback()
            #expect(context.registeredObject(for: id) == nil)
            context.insert(p)
            #expect(p.objectID == id)
            #expect(context.registeredObject(for: id) === p)
            #expect(try context.existingObject(with: id) === p)
            #expect(context.object(with: id) === p)
            #expect(context.insertedObjects == [p] && context.registeredObjects.filter { $0 === p }.count == 1)
            #expect(try context.fetch(FetchRequest<Person>(predicate: #Predicate { $0.name == "again" })) == [p])
            try context.save()
            #expect(context.registeredObject(for: id) === p)
            return id
        }
        let reader = try SavedPeople.reader(context)
        try reader.performAndWait { () throws in
            #expect((try reader.existingObject(with: id) as? Person)?.name == "again")
            #expect(try reader.count(for: FetchRequest<Person>(predicate: #Predicate { $0.name == "again" })) == 1)
        }
    }
}
