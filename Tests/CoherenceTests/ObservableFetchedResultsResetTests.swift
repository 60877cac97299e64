import Foundation
import Observation
import Testing
@testable import Coherence
@testable import CoherenceBase
@testable import CoherenceContext
@testable import CoherenceSQLite
@testable import CoherenceStore

// `ObservableFetchedResults` after changes that leave the same results: a reset makes every
// object new, so its `objects` and `sections` must take the context's new instances (the old
// ones are gone from the context) and its observers be told, though no object was inserted,
// deleted, moved or updated.

@Suite struct ObservableFetchedResultsResetTests {
    final class Counter: @unchecked Sendable { var count = 0 }

    @Test func aResetGivesTheObjectsOfTheContextAgain() throws {
        let dir = try TemporaryDirectory()
        let context = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: try makeCoordinator(.sqlite, in: dir))
        let people = try context.performAndWait { () throws in
            for n in ["Ann", "Bob"] {
                let p = Person(context: context)
                p.name = n
            }
            try context.save()
            return try ObservableFetchedResults(
                fetchRequest: FetchRequest<Person>(sortBy: [SortDescriptor(\.name)]), managedObjectContext: context,
                sectionNameKeyPath: \Person.initial)
        }
        let changes = Counter()
        try context.performAndWait { () throws in
            withObservationTracking {
                _ = people.objects
            } onChange: {
                changes.count += 1
            }
            context.reset()
            #expect(changes.count == 1)
            #expect(people.objects.map(\.name) == ["Ann", "Bob"])
            #expect(people.objects.allSatisfy { $0.managedObjectContext === context })
            #expect(people.objects.map(ObjectIdentifier.init) == people.controller.fetchedObjects.map(ObjectIdentifier.init))
            #expect(people.sections.flatMap(\.objects).allSatisfy { $0.managedObjectContext === context })
            #expect(people.difference.isEmpty)
            // The new instances follow changes as before.
            withObservationTracking {
                _ = people.objects
            } onChange: {
                changes.count += 1
            }
            try #require(people.objects.first).name = "Cy"
            context.processPendingChanges()
            #expect(changes.count == 2)
            #expect(people.objects.map(\.name) == ["Bob", "Cy"])
        }
    }
}
