import Foundation
import Testing
@testable import Coherence
@testable import CoherenceBase
@testable import CoherenceContext
@testable import CoherenceSQLite
@testable import CoherenceStore

// Controllers on nested contexts: on a parent, a child's save (inserts, deletes, edits of objects
// the parent never loaded) is reported; on a child that merges its parent's saves, the parent's
// saves are. Each difference applies, and the results are what a fetch returns.

@Suite struct FetchedResultsControllerNestedContextTests {
    /// Controller on a parent context: a child's save pushes inserts, edits of objects the parent
    /// never loaded, and deletes.
    @Test func aChildsSaveIsReportedInTheParent() throws {
        let dir = try TemporaryDirectory()
        let coordinator = try makeCoordinator(.sqlite, in: dir)
        let parent = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: coordinator)
        let request = FetchRequest<Person>(predicate: #Predicate { $0.age < 100 }, sortBy: [SortDescriptor(\.name)])
        let controller = FetchedResultsController(fetchRequest: request, managedObjectContext: parent, sectionNameKeyPath: \Person.initial)
        let recorder = ChangeRecorder()
        try saveInBackground(coordinator) { c in
            for (i, n) in ["Ann", "Bob", "Cid", "Dan", "Eve"].enumerated() {
                let p = Person(context: c)
                p.name = n
                p.age = i < 3 ? i : 150
            }
        }
        try parent.performAndWait { () throws in
            try controller.performFetch()
            controller.delegate = recorder
        }
        var previous = try #require(controller.snapshot)
        let child = ManagedObjectContext(concurrencyType: .privateQueue, parent: parent, name: "child")
        try child.performAndWait { () throws in
            let all = try child.fetch(FetchRequest<Person>(sortBy: [SortDescriptor(\.name)]))
            all[3].age = 4  // Dan: never loaded in the parent, now matches
            all[0].name = "Zoe"  // Ann moves
            child.delete(all[1])  // Bob
            let p = Person(context: child)
            p.name = "Abe"
            p.age = 1
            try child.save()
        }
        try expectControllerAgreesWithAFetch(controller, recorder, previous: &previous, request: request, "child save")
        try parent.performAndWait { () throws in try parent.save() }
        try expectControllerAgreesWithAFetch(controller, recorder, previous: &previous, request: request, "parent save")
    }

    /// Controller on a child context that merges its parent's saves.
    @Test func aParentsSaveIsReportedInAMergingChild() throws {
        let dir = try TemporaryDirectory()
        let coordinator = try makeCoordinator(.sqlite, in: dir)
        let parent = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: coordinator)
        let child = ManagedObjectContext(concurrencyType: .privateQueue, parent: parent, name: "child")
        child.automaticallyMergesChangesFromParent = true
        let request = FetchRequest<Person>(predicate: #Predicate { $0.age < 100 }, sortBy: [SortDescriptor(\.name)])
        let controller = FetchedResultsController(fetchRequest: request, managedObjectContext: child)
        let recorder = ChangeRecorder()
        try parent.performAndWait { () throws in
            for (i, n) in ["Ann", "Bob", "Cid", "Dan", "Eve"].enumerated() {
                let p = Person(context: parent)
                p.name = n
                p.age = i < 3 ? i : 150
            }
            try parent.save()
        }
        try child.performAndWait { () throws in
            try controller.performFetch()
            controller.delegate = recorder
        }
        var previous = try #require(controller.snapshot)
        try parent.performAndWait { () throws in
            let all = try parent.fetch(FetchRequest<Person>(sortBy: [SortDescriptor(\.name)]))
            all[3].age = 4
            all[0].name = "Zoe"
            parent.delete(all[1])
            let p = Person(context: parent)
            p.name = "Abe"
            p.age = 1
            try parent.save()
        }
        child.performAndWait {}
        try expectControllerAgreesWithAFetch(controller, recorder, previous: &previous, request: request, "parent save")
        // An object the child never loaded that starts to match.
        try parent.performAndWait { () throws in
            let all = try parent.fetch(FetchRequest<Person>(sortBy: [SortDescriptor(\.name)]))
            all.first { $0.name == "Eve" }?.age = 3
            try parent.save()
        }
        child.performAndWait {}
        try expectControllerAgreesWithAFetch(controller, recorder, previous: &previous, request: request, "parent save 2")
    }
}
