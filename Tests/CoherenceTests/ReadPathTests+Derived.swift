import Foundation
import Testing
@testable import Coherence
@testable import CoherenceBase
@testable import CoherenceContext
@testable import CoherenceSQLite
@testable import CoherenceStore

/// Committed to-one destinations derived from foreign-key slots, and the key path → slot table.
@Suite("Read path: derived committed to-one destinations and the slot table")
struct DerivedReadPathTests {
    static func townRelationship(_ context: ManagedObjectContext) throws -> RelationshipDescription {
        try #require(context.managedObjectModel.entitiesByName["Person"]?.relationshipsByName["town"])
    }

    @Test func fetchedObjectsDeriveCommittedDestinationsFromForeignKeys() throws {
        let dir = try TemporaryDirectory()
        let coordinator = try makeCoordinator(.sqlite, in: dir)
        try ReadPathTests.seed(coordinator)
        let context = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: coordinator)
        try context.performAndWait {
            let r = try Self.townRelationship(context)
            let people = try ReadPathTests.people(context)
            let (ada, bob, cy) = (people[0], people[1], people[2])
            // Rows from the store keep no destination array: the foreign keys name them.
            #expect(people.allSatisfy { $0._state.committedToOne == nil })
            let paris = try #require(ada.town), rome = try #require(cy.town)
            #expect(ada._committedToOneID(r) == paris.objectID && cy._committedToOneID(r) == rome.objectID)
            #expect(ada.entity.foreignKeyRelationships.map { ada._committedToOneID($0) } == [paris.objectID])
            #expect(!ada.hasChanges && ada.changedValues().isEmpty)

            // Moving Ada away and back is no change; moving her is.
            ada.town = rome
            #expect(ada.hasChanges && ada.changedValues()["town"] != nil)
            ada.town = paris
            #expect(!ada.hasChanges)
            ada.town = rome
            try context.save()
            #expect(ada._committedToOneID(r) == rome.objectID && !ada.hasChanges)
            #expect(bob._committedToOneID(r) == paris.objectID && bob._state.committedToOne == nil)

            // A fresh context reads the saved foreign key.
            let other = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: coordinator)
            try other.performAndWait {
                let theirs = try ReadPathTests.people(other)
                #expect(theirs.map { $0.town?.name } == ["Rome", "Paris", "Rome"])
            }
        }
    }

    @Test func groupMixingDerivedAndExplicitDestinationsResolvesEach() throws {
        let dir = try TemporaryDirectory()
        let coordinator = try makeCoordinator(.sqlite, in: dir)
        try ReadPathTests.seed(coordinator)
        let context = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: coordinator)
        try context.performAndWait {
            let towns = try context.fetch(FetchRequest<Town>(sortBy: [SortDescriptor(\.name)]))
            let rome = try #require(towns.last)
            // Saved here: Dee's committed destination is set explicitly, not derived.
            let dee = Person(context: context)
            dee.name = "Dee"
            dee.town = rome
            let nobody = Person(context: context)
            nobody.name = "Eve"
            try context.save()
            #expect(dee._state.committedToOne != nil)

            let people = try ReadPathTests.people(context)
            #expect(people.map(\.name) == ["Ada", "Bob", "Cy", "Dee", "Eve"])
            // The first read registers the destinations of the whole group.
            #expect(people.map { $0.town?.name } == ["Paris", "Paris", "Rome", "Rome", nil])
            #expect(people[3].town === rome && people[2].town === rome && people[0].town === people[1].town)
        }
    }

    @Test func childContextsSeeTheParentsUnsavedDestinations() throws {
        let dir = try TemporaryDirectory()
        let coordinator = try makeCoordinator(.sqlite, in: dir)
        try ReadPathTests.seed(coordinator)
        let parent = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: coordinator)
        try parent.performAndWait {
            let people = try ReadPathTests.people(parent)
            people[0].town = people[2].town  // Ada to Rome, unsaved
            let oslo = Town(context: parent)  // a temporary ID
            oslo.name = "Oslo"
            people[1].town = oslo  // Bob to Oslo, unsaved
        }
        let child = ManagedObjectContext(concurrencyType: .privateQueue, parent: parent)
        try child.performAndWait {
            let people = try ReadPathTests.people(child)
            #expect(people.map { $0.town?.name } == ["Rome", "Oslo", "Rome"])
            #expect(people[0].town === people[2].town)
            #expect(people[1].town?.objectID.isTemporaryID == true)
            #expect(!people[0].hasChanges && !people[1].hasChanges)
        }
    }
}
