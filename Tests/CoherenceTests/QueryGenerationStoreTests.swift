import Foundation
import Testing
@testable import Coherence
@testable import CoherenceBase
@testable import CoherenceContext
@testable import CoherenceStore

/// Query generations while stores come and go, and saves from a pinned context.
@Suite struct QueryGenerationStoreTests {
    static func insert(_ name: String, into store: PersistentStore, of coordinator: PersistentStoreCoordinator) throws {
        let writer = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: coordinator)
        try writer.performAndWait {
            let p = Person(context: writer)
            p.name = name
            try writer.assign(p, to: store)
            try writer.save()
        }
    }

    static func names(_ context: ManagedObjectContext) throws -> [String] {
        try context.performAndWait {
            try context.fetch(FetchRequest<Person>(sortBy: [SortDescriptor(\Person.name)])).map(\.name)
        }
    }

    /// "A store attached after a generation was pinned is read as it is now" — also when it is
    /// a store the generation had a snapshot of, removed and attached again (same file, same
    /// identifier): its old snapshot was closed with it, and is not read.
    @Test(arguments: PostgreSQLTestServer.storeTypes)
    func aStoreRemovedAndAttachedAgainIsReadAsItIsNow(_ type: StoreType) throws {
        let dir = try TemporaryDirectory()
        let coordinator = PersistentStoreCoordinator(managedObjectModel: try makeTestModel())
        let first = try coordinator.addPersistentStore(type: .sqlite, at: dir.file("first.sqlite"))
        let url: URL? = type == .inMemory ? nil : try dir.storeURL(type, "second")
        var second = try coordinator.addPersistentStore(type: type, at: url)
        try Self.insert("Ada", into: first, of: coordinator)
        try Self.insert("Bob", into: second, of: coordinator)
        let view = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: coordinator, name: "view")
        try view.performAndWait {
            try view.setQueryGeneration(from: .current)
            #expect(try view.count(for: FetchRequest<Person>()) == 2)
        }
        try Self.insert("Cy", into: first, of: coordinator)
        // Removed: the pinned context reads the stores still attached, at its snapshot.
        try coordinator.remove(second)
        #expect(try Self.names(view) == ["Ada"])
        // Attached again (a SQLite file or a PostgreSQL schema keeps its identifier; an
        // in-memory store is a new one).
        second = try coordinator.addPersistentStore(type: type, at: url)
        try Self.insert("Dee", into: second, of: coordinator)
        let expected = type == .inMemory ? ["Ada", "Dee"] : ["Ada", "Bob", "Dee"]
        #expect(try Self.names(view) == expected)
        try view.performAndWait { () throws in
            view.reset()
            #expect(try view.count(for: FetchRequest<Person>()) == expected.count + 1)  // and Cy
        }
    }

    /// "A pinned context can save. Its changes are written against the stores as they are now:
    /// an object changed elsewhere since the snapshot is a version conflict, resolved by the
    /// context's merge policy as usual."
    @Test func aPinnedContextResolvesAConflictAgainstTheStoreAsItIsNow() throws {
        let f = try QueryGenerationTests.Fixture(.sqlite)
        let view = try f.pinnedContext("view")
        view.mergePolicy = .mergeByPropertyStoreTrump
        let ada = f.people[0]
        try view.performAndWait {
            let person = try #require(view.existingObject(with: ada) as? Person)
            #expect(person.age == 30)
        }
        let other = f.context("other")
        try other.performAndWait {
            let person = try #require(other.existingObject(with: ada) as? Person)
            person.age = 99
            try other.save()
        }
        try view.performAndWait {
            let person = try #require(view.existingObject(with: ada) as? Person)
            person.name = "Ada L."
            try view.save()
            #expect(person.age == 99)
        }
        let fresh = f.context("fresh")
        try fresh.performAndWait {
            let person = try #require(fresh.existingObject(with: ada) as? Person)
            #expect(person.name == "Ada L.")
            #expect(person.age == 99)
        }
    }

    /// A pinned context inserting a unique value another context saved after the snapshot:
    /// under object trump the save takes over the stored row (upsert), as an unpinned
    /// context's would.
    @Test func aPinnedContextUpsertsARowSavedAfterItsSnapshot() throws {
        let f = try QueryGenerationTests.Fixture(.sqlite)
        let view = try f.pinnedContext("view")
        view.mergePolicy = .mergeByPropertyObjectTrump
        let other = f.context("other")
        try other.performAndWait {
            let town = Town(context: other)
            town.name = "Nice"
            town.population = 1
            try other.save()
        }
        try view.performAndWait {
            #expect(try view.count(for: FetchRequest<Town>(predicate: #Predicate { $0.name == "Nice" })) == 0)
            let town = Town(context: view)
            town.name = "Nice"
            town.population = 2
            try view.save()
        }
        let fresh = f.context("fresh")
        try fresh.performAndWait {
            let towns = try fresh.fetch(FetchRequest<Town>(predicate: #Predicate { $0.name == "Nice" }))
            #expect(towns.map(\.population) == [2])
        }
    }
}
