import Foundation
import Testing
@testable import Coherence
@testable import CoherenceBase
@testable import CoherenceContext
@testable import CoherenceSQLite
@testable import CoherenceStore

// Objects whose sort values tie are in the order a fetch gives them (saved ones by primary key,
// inserted ones last, in the order they were made), whether the controller placed them in
// memory after a change of its context, a save or a merge, or fetched them again.

/// Checks that the controller shows what a fetch of `request` returns, and that each difference
/// the recorder got turns the previous snapshot into the next one.
func expectControllerAgreesWithAFetch(
    _ controller: FetchedResultsController<Person>, _ recorder: ChangeRecorder, previous: inout FetchedResultsSnapshot,
    request: FetchRequest<Person>, _ label: String
) throws {
    let context = controller.managedObjectContext
    let fresh = try context.performAndWait { () throws in try context.fetch(request).map(\.objectID) }
    let snapshot = try #require(controller.snapshot)
    #expect(snapshot.objectIDs == fresh, "\(label)")
    for s in recorder.snapshots {
        var problems: [String] = []
        let applied = applyDifference(s.difference, to: previous, problems: &problems)
        #expect(problems.isEmpty, "\(label): \(problems)")
        #expect(sameResults(applied, s, permanent: [:]), "\(label)")
        previous = s
    }
    recorder.clear()
}

@Suite struct FetchedResultsControllerTieOrderTests {
    /// Ties: objects with equal sort values, in the order a fetch gives them (primary key,
    /// inserted objects last).
    @Test(arguments: [StoreType.sqlite, .inMemory])
    func tiesAreInTheOrderOfAFetch(_ type: StoreType) throws {
        let dir = try TemporaryDirectory("frc-probe-ties-\(type)")
        let coordinator = try makeCoordinator(type, in: dir)
        let context = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: coordinator)
        let request = FetchRequest<Person>(sortBy: [SortDescriptor(\.age)])
        let controller = FetchedResultsController(fetchRequest: request, managedObjectContext: context)
        let recorder = ChangeRecorder()
        try context.performAndWait { () throws in
            context.automaticallyMergesChangesFromParent = true
            for (i, n) in ["Ann", "Bob", "Cid", "Dan", "Eve", "Fay"].enumerated() {
                let p = Person(context: context)
                p.name = n
                p.age = i % 3
            }
            try context.save()
            try controller.performFetch()
            controller.delegate = recorder
        }
        var previous = try #require(controller.snapshot)
        try expectControllerAgreesWithAFetch(controller, recorder, previous: &previous, request: request, "start")
        let steps: [(String, Int)] = [("Ann", 1), ("Fay", 0), ("Cid", 1), ("Bob", 2), ("Eve", 0)]
        for (name, age) in steps {
            try context.performAndWait { () throws in
                let p = try #require(try context.fetch(FetchRequest<Person>(predicate: #Predicate { $0.name == name })).first)
                p.age = age
                let q = Person(context: context)
                q.name = "new\(name)"
                q.age = age
            }
            try expectControllerAgreesWithAFetch(controller, recorder, previous: &previous, request: request, "\(name) → \(age)")
            try context.performAndWait { () throws in try context.save() }
            try expectControllerAgreesWithAFetch(controller, recorder, previous: &previous, request: request, "saved \(name) → \(age)")
        }
        try saveInBackground(coordinator) { c in
            let all = try c.fetch(FetchRequest<Person>(sortBy: [SortDescriptor(\.name)]))
            for (i, p) in all.enumerated() where i % 2 == 0 { p.age = 1 }
            let p = Person(context: c)
            p.name = "Merged"
            p.age = 1
        }
        context.performAndWait {}
        try expectControllerAgreesWithAFetch(controller, recorder, previous: &previous, request: request, "merged")
    }
}
