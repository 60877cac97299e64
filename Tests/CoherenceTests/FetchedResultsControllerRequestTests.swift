import Foundation
import Testing
@testable import Coherence
@testable import CoherenceBase
@testable import CoherenceContext
@testable import CoherenceSQLite
@testable import CoherenceStore

// A controller's `fetchRequest` set anew takes effect at the next `performFetch()`: until then,
// and when that fetch fails, the controller follows the request of its last fetch, also when a
// change makes it fetch again (a delete that leaves full results short of their limit).

@Suite struct FetchedResultsControllerRequestTests {
    /// The names of a fetch of `request`, as the fixture's layout shows them (one section).
    func freshLayout(_ f: ControllerFixture, _ request: FetchRequest<Person>) throws -> String {
        try f.context.performAndWait { () throws in ":" + (try f.context.fetch(request).map(\.name)).joined(separator: ",") }
    }

    @Test func aRequestSetWithoutPerformFetchIsNotFollowedYet() throws {
        let f = try ControllerFixture(limit: 3)
        #expect(f.layout() == ":Ann,Bob,Cid")
        let old = f.controller.fetchRequest
        try f.context.performAndWait { () throws in
            f.controller.fetchRequest = FetchRequest<Person>(
                predicate: #Predicate { $0.age > 2 }, sortBy: [SortDescriptor(\.name, order: .reverse)])
            f.context.delete(try #require(f.controller.fetchedObjects.first { $0.name == "Bob" }))
        }
        #expect(f.layout() == ":Ann,Cid,Dan")
        #expect(try f.layout() == freshLayout(f, old))
        // performFetch takes the new request.
        try f.context.performAndWait { () throws in try f.controller.performFetch() }
        #expect(f.layout() == ":Dan,Cid")
    }

    @Test func aFailedPerformFetchKeepsFollowingTheRequestOfTheLastOne() throws {
        // Saved out of name order, so that an unsorted fetch gives another order.
        let f = try ControllerFixture(names: ["Dan", "Cid", "Bob", "Ann", "Eve"], limit: 3)
        #expect(f.layout() == ":Ann,Bob,Cid")
        let old = f.controller.fetchRequest
        try f.context.performAndWait { () throws in
            f.controller.fetchRequest = FetchRequest<Person>()
            #expect(throws: CoherenceError.self) { try f.controller.performFetch() }
            f.context.delete(try #require(f.controller.fetchedObjects.first { $0.name == "Bob" }))
        }
        #expect(f.layout() == ":Ann,Cid,Dan")
        #expect(try f.layout() == freshLayout(f, old))
    }

    /// A delegate that fetches again (with a new request) when told of a change: the
    /// controller's snapshot and change handlers end with the results of that fetch, not with
    /// the change being reported (which came after them before).
    @Test(arguments: [false, true])
    func aDelegateThatFetchesAgainLeavesTheNewerSnapshot(_ fromSnapshotMethod: Bool) throws {
        let f = try ControllerFixture()
        let refetcher = RefetchingDelegate(fromSnapshotMethod: fromSnapshotMethod)
        let handled = LockedValue<[ObjectID]>([])
        f.context.performAndWait {
            f.controller.delegate = refetcher
            f.controller.changeHandlers.append { snapshot in handled.withLock { $0 = snapshot.objectIDs } }
            let p = Person(context: f.context)
            p.name = "Bea"
            p.age = 5
        }
        #expect(refetcher.fetches == 1)
        #expect(f.layout() == ":Dan,Cid,Bob,Bea,Ann")
        let fetched = f.context.performAndWait { f.controller.fetchedObjects.map(\.objectID) }
        #expect(f.controller.snapshot?.objectIDs == fetched)
        #expect(handled.withLock { $0 } == fetched)
    }
}

/// Fetches again, once, in reverse name order, from `controllerDidChangeContent` or from the
/// snapshot method.
final class RefetchingDelegate: FetchedResultsControllerDelegate {
    typealias ResultType = Person
    let fromSnapshotMethod: Bool
    var fetches = 0

    init(fromSnapshotMethod: Bool) { self.fromSnapshotMethod = fromSnapshotMethod }

    func controllerDidChangeContent(_ controller: FetchedResultsController<Person>) {
        if !fromSnapshotMethod { fetchAgain(controller) }
    }

    func controller(_ controller: FetchedResultsController<Person>, didChangeContentWith snapshot: FetchedResultsSnapshot) {
        if fromSnapshotMethod { fetchAgain(controller) }
    }

    private func fetchAgain(_ controller: FetchedResultsController<Person>) {
        guard fetches == 0 else { return }
        fetches += 1
        controller.fetchRequest = FetchRequest<Person>(sortBy: [SortDescriptor(\.name, order: .reverse)])
        try? controller.performFetch()
    }
}
