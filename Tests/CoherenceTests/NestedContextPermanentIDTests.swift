import Foundation
import Testing
@testable import Coherence
@testable import CoherenceBase
@testable import CoherenceContext
@testable import CoherenceStore

// A child context whose parent saved inside the child's own block (so the queued update of its
// temporary IDs has not run yet) still names the parent's objects rightly: a second save reaches
// the store, and a fetch returns the objects it already has.

@Suite("Nested contexts: permanent IDs within one block")
struct NestedContextPermanentIDTests {
    /// A SQLite store's coordinator, a context on it and a child of that context.
    static func parentAndChild(in dir: TemporaryDirectory) throws -> (
        PersistentStoreCoordinator, ManagedObjectContext, ManagedObjectContext
    ) {
        let coordinator = try makeCoordinator(.sqlite, in: dir)
        let parent = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: coordinator, name: "parent")
        return (coordinator, parent, ManagedObjectContext(concurrencyType: .privateQueue, parent: parent, name: "child"))
    }

    @Test func aChildSavesAgainAfterItsParentSavedInTheSameBlock() throws {
        let dir = try TemporaryDirectory()
        let (coordinator, parent, child) = try Self.parentAndChild(in: dir)
        try child.performAndWait {
            let oslo = Town(context: child)
            oslo.name = "Oslo"
            try child.save()
            try parent.performAndWait { try parent.save() }
            oslo.population = 42
            let ada = Person(context: child)
            ada.name = "Ada"
            ada.town = oslo
            try child.save()
            try parent.performAndWait { try parent.save() }
        }
        let reader = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: try reopen(coordinator))
        let towns = try reader.performAndWait {
            try reader.fetch(FetchRequest<Town>()).map { "\($0.name) \($0.population) \($0.people.map(\.name))" }
        }
        #expect(towns == ["Oslo 42 [\"Ada\"]"])
    }

    @Test func aChildFetchAfterItsParentSavedInTheSameBlockKeepsOneObjectPerRow() throws {
        let dir = try TemporaryDirectory()
        let (_, parent, child) = try Self.parentAndChild(in: dir)
        try child.performAndWait {
            let oslo = Town(context: child)
            oslo.name = "Oslo"
            try child.save()
            try parent.performAndWait { try parent.save() }
            let fetched = try child.fetch(FetchRequest<Town>())
            #expect(fetched.count == 1 && fetched.first === oslo)
            #expect(!oslo.objectID.isTemporaryID)
        }
    }
}
