import Foundation
import Testing
@testable import Coherence
@testable import CoherenceBase
@testable import CoherenceContext
@testable import CoherenceSQLite
@testable import CoherenceStore

/// The fast read path: objects registered straight from store rows, cached to-one destinations
/// and objects that outlive their context.
@Suite("Read path: cached to-one destinations and detached objects")
struct ReadPathTests {
    /// Two towns; Ada and Bob live in Paris, Cy in Rome.
    static func seed(_ coordinator: PersistentStoreCoordinator) throws {
        let context = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: coordinator, name: "seed")
        try context.performAndWait {
            let paris = Town(context: context)
            paris.name = "Paris"
            let rome = Town(context: context)
            rome.name = "Rome"
            for (name, town) in [("Ada", paris), ("Bob", paris), ("Cy", rome)] {
                let p = Person(context: context)
                p.name = name
                p.town = town
            }
            try context.save()
        }
    }

    static func people(_ context: ManagedObjectContext) throws -> [Person] {
        try context.fetch(FetchRequest<Person>(sortBy: [SortDescriptor(\.name)]))
    }

    @Test func toOneReadsFollowInMemoryChangesSavesAndRefreshes() throws {
        let dir = try TemporaryDirectory()
        let coordinator = try makeCoordinator(.sqlite, in: dir)
        try Self.seed(coordinator)
        let context = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: coordinator)
        try context.performAndWait {
            let people = try Self.people(context)
            #expect(people.map { $0.town?.name } == ["Paris", "Paris", "Rome"])
            let (ada, bob, cy) = (people[0], people[1], people[2])
            let paris = try #require(ada.town)
            let rome = try #require(cy.town)
            #expect(bob.town === paris)  // one object per row, also through the cache

            ada.town = rome
            #expect(ada.town === rome)
            ada.town = nil
            #expect(ada.town == nil)
            ada.town = rome
            try context.save()
            #expect(ada.town === rome && bob.town === paris)

            // Another context moves Bob to Rome; refreshing Bob here shows it.
            let other = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: coordinator)
            try other.performAndWait {
                let theirs = try Self.people(other)
                theirs[1].town = theirs[2].town
                try other.save()
            }
            context.refresh(bob, mergeChanges: false)
            #expect(bob.town === rome)
            #expect(bob.town?.name == "Rome")
        }
    }

    @Test func toOneReadsSeeDeletedDestinationsAndResets() throws {
        let dir = try TemporaryDirectory()
        let coordinator = try makeCoordinator(.sqlite, in: dir)
        try Self.seed(coordinator)
        let context = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: coordinator)
        try context.performAndWait {
            let people = try Self.people(context)
            let cy = people[2]
            let rome = try #require(cy.town)
            // Deleting Rome cascades to Cy; after the save neither is in the context.
            context.delete(rome)
            #expect(cy.isDeleted)
            try context.save()
            #expect(cy.managedObjectContext == nil && cy.town == nil)

            let ada = people[0]
            let paris = try #require(ada.town)
            context.reset()
            #expect(ada.managedObjectContext == nil)
            #expect(ada.town == nil)
            // After the reset the same rows come back as new objects, with their destinations.
            let again = try Self.people(context)
            #expect(again.count == 2)
            #expect(again[0] !== ada)
            let newParis = try #require(again[0].town)
            #expect(newParis !== paris && newParis.name == "Paris")
            #expect(again[1].town === newParis)
        }
    }

    @Test func registrationChangesDoNotLeaveStaleDestinations() throws {
        let dir = try TemporaryDirectory()
        let coordinator = try makeCoordinator(.sqlite, in: dir)
        try Self.seed(coordinator)
        let context = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: coordinator)
        try context.performAndWait {
            let people = try Self.people(context)
            let paris = try #require(people[0].town)
            // Another context deletes Bob and saves; Paris stays, and Ada still finds it.
            let other = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: coordinator)
            try other.performAndWait {
                other.delete(try Self.people(other)[1])
                try other.save()
            }
            context.refresh(people[0], mergeChanges: false)
            #expect(people[0].town === paris)
            // Inserting objects changes the identity map; cached reads stay right.
            let lyon = Town(context: context)
            lyon.name = "Lyon"
            #expect(people[0].town === paris)
            people[0].town = lyon
            #expect(people[0].town === lyon && people[0].town?.name == "Lyon")
        }
    }

    @Test func objectsOutlivingTheirContextSeeNoContext() throws {
        let dir = try TemporaryDirectory()
        let coordinator = try makeCoordinator(.sqlite, in: dir)
        try Self.seed(coordinator)
        weak var weakContext: ManagedObjectContext?
        let (ada, cy): (Person, Person) = try {
            let context = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: coordinator)
            weakContext = context
            return try context.performAndWait {
                let people = try Self.people(context)
                #expect(people[0].town?.name == "Paris")  // fills the cached destination
                _ = people[2].name
                return (people[0], people[2])
            }
        }()
        #expect(weakContext == nil)
        #expect(ada.managedObjectContext == nil && cy.managedObjectContext == nil)
        #expect(ada.town == nil)  // the cached destination is gone with the context
        #expect(cy.town == nil)
        #expect(ada.name == "Ada" && cy.name == "Cy")
        #expect(!ada.hasChanges)
    }

    @Test func fetchesOfAChildContextAndOfSubentitiesKeepTheirTypes() throws {
        let dir = try TemporaryDirectory()
        let coordinator = try makeCoordinator(.sqlite, in: dir)
        try Self.seed(coordinator)
        let context = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: coordinator)
        try context.performAndWait {
            let c = Circle(context: context)
            c.radius = 2
            let s = Square(context: context)
            s.side = 3
            try context.save()
            let shapes = try context.fetch(FetchRequest<Shape>(sortBy: [SortDescriptor(\.label)]))
            #expect(shapes.count == 2)
            #expect(shapes.contains { $0 is Circle } && shapes.contains { $0 is Square })
            #expect(try context.fetch(FetchRequest<Circle>()).map(\.radius) == [2])
        }
        let child = ManagedObjectContext(concurrencyType: .privateQueue, parent: context)
        try child.performAndWait {
            let people = try Self.people(child)
            #expect(people.map { $0.town?.name } == ["Paris", "Paris", "Rome"])
            #expect(people[0].town === people[1].town)
        }
    }
}
