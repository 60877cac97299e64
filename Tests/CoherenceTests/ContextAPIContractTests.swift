import Foundation
import Testing
@testable import Coherence
@testable import CoherenceBase
@testable import CoherenceContext
@testable import CoherenceSQLite
@testable import CoherenceStore

/// The context API against Core Data's documented behaviour: refreshes and merges with unsaved
/// changes, deletes merged under local edits, IDs of other contexts, stores and coordinators,
/// change sets, rollback, sub-entities and fetch options.
@Suite("Context API contracts")
struct ContextAPIContractTests {
    /// A pending delete survives `refreshAllObjects()` and a merged update of the object, and
    /// the save deletes the row.
    @Test(arguments: PostgreSQLTestServer.storeTypes)
    func pendingDeleteSurvivesRefreshAndMerge(_ type: StoreType) throws {
        let dir = try TemporaryDirectory()
        let context = try SavedPeople.context(dir, type)
        let other = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: context.persistentStoreCoordinator)
        let note = LockedValue<Notification?>(nil)
        let token = NotificationCenter.default.addObserver(forName: ManagedObjectContext.didSaveNotification, object: other, queue: nil) {
            n in
            note.withLock { $0 = n }
        }
        defer { NotificationCenter.default.removeObserver(token) }
        let id = try context.performAndWait {
            let p = try context.fetch(FetchRequest<Person>(predicate: #Predicate { $0.name == "zed" }))[0]
            context.delete(p)
            context.refreshAllObjects()
            #expect(p.isDeleted)
            #expect(context.deletedObjects == [p])
            return p.objectID
        }
        try other.performAndWait {
            let p = try other.existingObject(with: id) as! Person
            p.age = 99
            try other.save()
        }
        let n = try #require(note.withLock { $0 })
        try context.performAndWait {
            context.mergeChanges(fromContextDidSave: n)
            let p = try #require(context.registeredObject(for: id))
            #expect(p.isDeleted)
            #expect(context.deletedObjects == [p])
            try context.save()
        }
        let fresh = try SavedPeople.reader(context)
        try fresh.performAndWait { () throws in
            #expect(try fresh.fetch(FetchRequest<Person>(predicate: #Predicate { $0.name == "zed" })).isEmpty)
        }
    }

    /// Objects deleted elsewhere (merged) that this context's unsaved edits point to (a club
    /// joined, an edited person): the save succeeds and writes no join row to a gone row.
    @Test(arguments: PostgreSQLTestServer.storeTypes)
    func mergedDeleteOfChangedRelations(_ type: StoreType) throws {
        let dir = try TemporaryDirectory()
        let context = try SavedPeople.context(dir, type)
        let other = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: context.persistentStoreCoordinator)
        let note = LockedValue<Notification?>(nil)
        let token = NotificationCenter.default.addObserver(forName: ManagedObjectContext.didSaveNotification, object: other, queue: nil) {
            n in
            note.withLock { $0 = n }
        }
        defer { NotificationCenter.default.removeObserver(token) }
        let (clubID, zedID) = try context.performAndWait {
            let club = Club(context: context)
            club.title = "Chess"
            try context.save()
            let zed = try context.fetch(FetchRequest<Person>(predicate: #Predicate { $0.name == "zed" }))[0]
            let apple = try context.fetch(FetchRequest<Person>(predicate: #Predicate { $0.name == "apple" }))[0]
            let rome = try context.fetch(FetchRequest<Town>(predicate: #Predicate { $0.name == "Rome" }))[0]
            _ = rome.people.count
            apple.clubs.insert(club)
            zed.name = "zed2"
            apple.town = rome
            return (club.objectID, zed.objectID)
        }
        try other.performAndWait {
            other.delete(try other.existingObject(with: clubID))
            other.delete(try other.existingObject(with: zedID))
            try other.save()
        }
        let n = try #require(note.withLock { $0 })
        let error: CoherenceError? = context.performAndWait {
            context.mergeChanges(fromContextDidSave: n)
            do throws(CoherenceError) {
                try context.save()
                return nil
            } catch { return error }
        }
        #expect(error == nil, "\(String(describing: error))")
        let fresh = try SavedPeople.reader(context)
        try fresh.performAndWait {
            let apple = try fresh.fetch(FetchRequest<Person>(predicate: #Predicate { $0.name == "apple" }))[0]
            #expect(apple.clubs.isEmpty)
            #expect(apple.town?.name == "Rome")
            #expect(try fresh.fetch(FetchRequest<Person>(predicate: #Predicate { $0.name.starts(with: "zed") })).isEmpty)
            #expect(try fresh.count(for: FetchRequest<Club>()) == 0)
        }
    }

    /// Another context deletes a town (cascading to its people) that this context's unsaved
    /// insert and update point to: merged, the save writes neither pointer to the gone row.
    @Test(arguments: PostgreSQLTestServer.storeTypes)
    func mergedCascadeUnderInsert(_ type: StoreType) throws {
        let dir = try TemporaryDirectory()
        let context = try SavedPeople.context(dir, type)
        let other = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: context.persistentStoreCoordinator)
        let note = LockedValue<Notification?>(nil)
        let token = NotificationCenter.default.addObserver(forName: ManagedObjectContext.didSaveNotification, object: other, queue: nil) {
            n in
            note.withLock { $0 = n }
        }
        defer { NotificationCenter.default.removeObserver(token) }
        let townID = try context.performAndWait {
            let oslo = try context.fetch(FetchRequest<Town>(predicate: #Predicate { $0.name == "Oslo" }))[0]
            let p = Person(context: context)
            p.name = "newbie"
            p.town = oslo
            let q = try context.fetch(FetchRequest<Person>(predicate: #Predicate { $0.name == "zed" }))[0]
            q.town = oslo
            return oslo.objectID
        }
        try other.performAndWait {
            other.delete(try other.existingObject(with: townID))
            try other.save()
        }
        let n = try #require(note.withLock { $0 })
        let error: CoherenceError? = context.performAndWait {
            context.mergeChanges(fromContextDidSave: n)
            do throws(CoherenceError) {
                try context.save()
                return nil
            } catch { return error }
        }
        #expect(error == nil, "\(String(describing: error))")
        let f = try SavedPeople.reader(context)
        try f.performAndWait {
            let all = try f.fetch(FetchRequest<Person>(sortBy: [SortDescriptor(\.name)]))
            // Oslo's people went with it; the objects pointing to it here are saved without a town.
            #expect(all.map { "\($0.name):\($0.town?.name ?? "-")" } == [":Rome", "Banana:Rome", "newbie:-", "zed:-"])
        }
    }

    /// `refreshAllObjects()` with unsaved attribute changes takes the to-one another context
    /// saved, and the save does not write the old one back.
    @Test(arguments: PostgreSQLTestServer.storeTypes)
    func refreshMergeTakesNewToOne(_ type: StoreType) throws {
        let dir = try TemporaryDirectory()
        let context = try SavedPeople.context(dir, type)
        let other = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: context.persistentStoreCoordinator)
        let id = try context.performAndWait {
            let p = try context.fetch(FetchRequest<Person>(predicate: #Predicate { $0.name == "zed" }))[0]
            #expect(p.town?.name == "Rome")
            _ = p.town?.people.count
            p.age = 50
            return p.objectID
        }
        try other.performAndWait {
            let p = try other.existingObject(with: id) as! Person
            p.town = try other.fetch(FetchRequest<Town>(predicate: #Predicate { $0.name == "Oslo" }))[0]
            p.score = 3
            try other.save()
        }
        try context.performAndWait {
            let p = try #require(context.registeredObject(for: id) as? Person)
            context.refreshAllObjects()
            #expect(p.town?.name == "Oslo")
            #expect(p.age == 50 && p.score == 3)
            try context.save()
        }
        let f = try SavedPeople.reader(context)
        try f.performAndWait {
            let p = try #require(try f.existingObject(with: id) as? Person)
            #expect(p.town?.name == "Oslo", "stored")
            #expect(p.age == 50 && p.score == 3)
        }
    }

    /// Another context's temporary ID names nothing here: not registered, `existingObject` and
    /// `fulfillFault` throw, edits of the stand-in are no change, and nothing is written.
    @Test(arguments: PostgreSQLTestServer.storeTypes)
    func temporaryIDFromAnotherContext(_ type: StoreType) throws {
        let dir = try TemporaryDirectory()
        let context = try SavedPeople.context(dir, type)
        let other = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: context.persistentStoreCoordinator)
        let temp = other.performAndWait {
            let p = Person(context: other)
            p.name = "temp"
            return p.objectID
        }
        try context.performAndWait {
            #expect(context.registeredObject(for: temp) == nil)
            #expect(throws: CoherenceError.self) { try context.existingObject(with: temp) }
            let o = context.object(with: temp)
            #expect(throws: CoherenceError.self) { try o.fulfillFault() }
            _ = (o as! Person).name
            (o as! Person).name = "changed"
            #expect(!context.hasChanges)
            context.rollback()
            try context.save()
        }
        try other.performAndWait { try other.save() }
        let fresh = try SavedPeople.reader(context)
        try fresh.performAndWait { () throws in
            #expect(try fresh.fetch(FetchRequest<Person>(predicate: #Predicate { $0.name == "temp" })).count == 1)
            #expect(try fresh.fetch(FetchRequest<Person>(predicate: #Predicate { $0.name == "changed" })).isEmpty)
        }
    }

    /// IDs of another coordinator's store and of a removed store: `existingObject` throws
    /// `.storeNotAttached`, the stand-in fault's `fulfillFault` throws, nothing changes.
    @Test(arguments: PostgreSQLTestServer.storeTypes)
    func detachedAndForeignIDs(_ type: StoreType) throws {
        let dir = try TemporaryDirectory()
        let context = try SavedPeople.context(dir, type)
        let coordinator = context.persistentStoreCoordinator
        let foreignDir = try TemporaryDirectory("foreign")
        let foreign = try SavedPeople.context(foreignDir, type)
        let foreignID = try foreign.performAndWait { try foreign.fetch(FetchRequest<Person>())[0].objectID }
        try context.performAndWait {
            #expect(context.registeredObject(for: foreignID) == nil)
            do {
                _ = try context.existingObject(with: foreignID)
                Issue.record("no error")
            } catch let e as CoherenceError {
                #expect(e.code == .storeNotAttached, "\(e)")
            }
            let f = context.object(with: foreignID)
            #expect(throws: CoherenceError.self) { try f.fulfillFault() }
            _ = (f as! Person).name
            #expect(f.isFault)
            // fetch with predicate naming the foreign object
            let r = FetchRequest<Person>(predicate: #Predicate { $0.age >= 0 })
            #expect(try context.fetch(r).count == 6)
            let p = try context.fetch(FetchRequest<Person>(sortBy: [SortDescriptor(\.name)]))[0]
            let id = p.objectID
            context.reset()
            try coordinator.remove(coordinator.persistentStores[0])
            do {
                _ = try context.existingObject(with: id)
                Issue.record("no error")
            } catch let e as CoherenceError {
                #expect(e.code == .storeNotAttached, "\(e)")
            }
            let g = context.object(with: id)
            #expect(throws: CoherenceError.self) { try g.fulfillFault() }
            #expect(!context.hasChanges)
            try context.save()
        }
    }

    /// Objects of two stores with the same primary key: distinct IDs, dictionary keys, objects
    /// and URIs; a fetch with unsaved changes, a limit and an offset spans both.
    @Test(arguments: PostgreSQLTestServer.storeTypes)
    func twoStoresSameKeys(_ type: StoreType) throws {
        let dir = try TemporaryDirectory()
        let coordinator = PersistentStoreCoordinator(managedObjectModel: try makeTestModel())
        let first = try coordinator.addPersistentStore(type: .sqlite, at: dir.file("a.sqlite"))
        let second = try coordinator.addPersistentStore(type: type, at: try dir.storeURL(type, "b"))
        let context = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: coordinator)
        try context.performAndWait {
            let a = Town(context: context)
            a.name = "A"
            let b = Town(context: context)
            b.name = "B"
            try context.assign(b, to: second)
            try context.save()
            #expect(a.objectID.primaryKey == b.objectID.primaryKey)
            #expect(a.objectID != b.objectID)
            var d: [ObjectID: String] = [:]
            d[a.objectID] = "a"
            d[b.objectID] = "b"
            #expect(d.count == 2)
            context.reset()
            #expect(try (context.existingObject(with: a.objectID) as? Town)?.name == "A")
            #expect(try (context.existingObject(with: b.objectID) as? Town)?.name == "B")
            let all = try context.fetch(FetchRequest<Town>(sortBy: [SortDescriptor(\.name)]))
            #expect(all.map(\.name) == ["A", "B"])
            #expect(coordinator.managedObjectID(forURIRepresentation: b.objectID.uriRepresentation()) == b.objectID)
            let c = Town(context: context)
            c.name = "AA"
            all[1].name = "0"
            var r = FetchRequest<Town>(sortBy: [SortDescriptor(\.name)])
            r.fetchLimit = 2
            #expect(try context.fetch(r).map(\.name) == ["0", "A"])
            #expect(try context.count(for: r) == 2)
            r.fetchOffset = 1
            #expect(try context.fetch(r).map(\.name) == ["A", "AA"])
            _ = first
        }
    }

    /// `includesSubentities = false`: an abstract entity has no objects of its own; counts and
    /// fetches with and without unsaved inserts.
    @Test(arguments: PostgreSQLTestServer.storeTypes)
    func subentities(_ type: StoreType) throws {
        let dir = try TemporaryDirectory()
        let context = try makeContext(dir, type: type)
        try context.performAndWait {
            let c = Circle(context: context)
            c.label = "c"
            let s = Square(context: context)
            s.label = "s"
            try context.save()
            let c2 = Circle(context: context)
            c2.label = "c2"
            var r = FetchRequest<Shape>()
            r.includesSubentities = false
            #expect(try context.fetch(r).isEmpty)
            #expect(try context.count(for: r) == 0)
            var rc = FetchRequest<Circle>()
            rc.includesSubentities = false
            #expect(try context.count(for: rc) == 2)
            r.includesSubentities = true
            #expect(try context.count(for: r) == 3)
            #expect(try context.fetch(r).count == 3)
            r.includesPendingChanges = false
            #expect(try context.count(for: r) == 2)
            #expect(try context.fetch(r).count == 2)
        }
    }

    /// Change sets: a value set back to the committed one is no change; an inserted then
    /// deleted object leaves nothing; a deleted object refreshed without merging is restored.
    @Test(arguments: PostgreSQLTestServer.storeTypes)
    func changeSets(_ type: StoreType) throws {
        let dir = try TemporaryDirectory()
        let context = try SavedPeople.context(dir, type)
        try context.performAndWait {
            let p = try context.fetch(FetchRequest<Person>(predicate: #Predicate { $0.name == "zed" }))[0]
            p.age = 40
            #expect(context.updatedObjects == [p])
            #expect(p.changedValues()["age"] as? Int == 40)
            #expect(p.committedValues(forKeys: ["age"])["age"] as? Int != 40)
            let old = p.committedValues(forKeys: ["age"])["age"] as! Int
            p.age = old
            #expect(!context.hasChanges)
            #expect(p.changedValues().isEmpty)
            #expect(context.updatedObjects.isEmpty)
            let n = Person(context: context)
            #expect(context.insertedObjects == [n])
            context.delete(n)
            #expect(context.insertedObjects.isEmpty && context.deletedObjects.isEmpty)
            #expect(!context.hasChanges)
            context.delete(p)
            #expect(context.deletedObjects == [p] && context.updatedObjects.allSatisfy { $0 is Town })
            context.refresh(p, mergeChanges: false)
            #expect(context.deletedObjects.isEmpty)
            #expect(!p.isDeleted)
            #expect(p.town != nil)
            try context.save()
        }
        let fresh = try SavedPeople.reader(context)
        try fresh.performAndWait {
            let p = try fresh.fetch(FetchRequest<Person>(predicate: #Predicate { $0.name == "zed" }))
            #expect(p.count == 1)
            #expect(p.first?.town?.name == "Rome")
        }
    }

    /// `rollback()` after a cascade delete restores every object and relationship.
    @Test(arguments: PostgreSQLTestServer.storeTypes)
    func rollbackCascade(_ type: StoreType) throws {
        let dir = try TemporaryDirectory()
        let context = try SavedPeople.context(dir, type)
        try context.performAndWait {
            let rome = try context.fetch(FetchRequest<Town>(predicate: #Predicate { $0.name == "Rome" }))[0]
            let people = rome.people
            #expect(people.count == 3)
            context.delete(rome)
            #expect(context.deletedObjects.count == 4)
            #expect(try context.count(for: FetchRequest<Person>()) == 3)
            context.rollback()
            #expect(!context.hasChanges)
            #expect(rome.people == people)
            #expect(people.allSatisfy { $0.town === rome && !$0.isDeleted })
            #expect(try context.count(for: FetchRequest<Person>()) == 6)
            try context.save()
        }
    }

    /// Fetch options: a negative limit is a typed error, an offset past the end gives nothing,
    /// non-faulting fetches fill objects, dictionaries name to-ones by ID and refuse to-manys
    /// and unknown names; predicates naming an unsaved inserted town match in memory.
    @Test(arguments: PostgreSQLTestServer.storeTypes)
    func fetchOptions(_ type: StoreType) throws {
        let dir = try TemporaryDirectory()
        let context = try SavedPeople.context(dir, type)
        try context.performAndWait {
            var r = FetchRequest<Person>(sortBy: [SortDescriptor(\.name)])
            r.fetchLimit = -1
            #expect(throws: CoherenceError.self) { try context.fetch(r) }
            #expect(throws: CoherenceError.self) { try context.count(for: r) }
            r.fetchLimit = 0
            r.fetchOffset = 100
            #expect(try context.fetch(r).isEmpty)
            #expect(try context.count(for: r) == 0)
            _ = Person(context: context)
            #expect(try context.fetch(r).isEmpty)
            #expect(try context.count(for: r) == 0)
            context.rollback()
            r.fetchOffset = 0
            r.returnsObjectsAsFaults = false
            let objs = try context.fetch(r)
            #expect(objs.allSatisfy { !$0.isFault })
            var d = FetchRequest<Person>(sortBy: [SortDescriptor(\.name)])
            d.propertiesToFetch = ["name", "town"]
            let dicts = try context.persistentStoreCoordinator.fetchDictionaries(d)
            #expect(dicts.count == 6)
            #expect(dicts.allSatisfy { $0["town"] is ObjectID })
            d.propertiesToFetch = ["clubs"]
            #expect(throws: CoherenceError.self) { try context.persistentStoreCoordinator.fetchDictionaries(d) }
            d.propertiesToFetch = ["nope"]
            #expect(throws: CoherenceError.self) { try context.persistentStoreCoordinator.fetchDictionaries(d) }
            // in-memory predicate naming an inserted town
            let t = Town(context: context)
            t.name = "New"
            let p = Person(context: context)
            p.name = "np"
            p.town = t
            let zed = try context.fetch(FetchRequest<Person>(predicate: #Predicate { $0.name == "zed" }))[0]
            zed.town = t
            let byTown = try context.fetch(FetchRequest<Person>(predicate: \.town == t, sortBy: [SortDescriptor(\.name)]))
            #expect(byTown.map(\.name) == ["np", "zed"])
            let byName = try context.fetch(
                FetchRequest<Person>(predicate: #Predicate { $0.town?.name == "New" }, sortBy: [SortDescriptor(\.name)]))
            #expect(byName.map(\.name) == ["np", "zed"])
            let ids = try context.fetch(ObjectIDFetchRequest<Person>().where(#Predicate { $0.town?.name == "New" }))
            #expect(ids.count == 2)
        }
    }
}
