import Foundation
import Observation
import Testing
@testable import Coherence
@testable import CoherenceBase
@testable import CoherenceContext
@testable import CoherenceSQLite
@testable import CoherenceStore

// The fetched-results controller: results, sections, and the differences it reports for
// the context's own changes, refreshes and resets. Merges: FetchedResultsControllerTests+Merges.

extension Person {
    /// The first letter of the name (the tests' section key).
    var initial: String { String(name.prefix(1)) }
}

/// Records a controller's delegate calls as text, in order.
final class ChangeRecorder: FetchedResultsControllerDelegate {
    typealias ResultType = Person
    var calls: [String] = []
    var snapshots: [FetchedResultsSnapshot] = []
    /// Names of the objects at the new (or old) index path of each object change, by type.
    var objects: [String] = []

    func controllerWillChangeContent(_ controller: FetchedResultsController<Person>) { calls.append("will") }
    func controller(
        _ controller: FetchedResultsController<Person>, didChange section: FetchedResultsSection<Person>, atSectionIndex sectionIndex: Int,
        for type: FetchedResultsChangeType
    ) {
        calls.append("\(type) section \(sectionIndex) \(section.name)")
    }
    func controller(
        _ controller: FetchedResultsController<Person>, didChange object: Person, at indexPath: IndexPath?,
        for type: FetchedResultsChangeType, newIndexPath: IndexPath?
    ) {
        let from = indexPath.map { "\($0.section).\($0.item)" } ?? "-"
        let to = newIndexPath.map { "\($0.section).\($0.item)" } ?? "-"
        calls.append("\(type) \(from)>\(to)")
        objects.append("\(type) \(object.name)")
    }
    func controllerDidChangeContent(_ controller: FetchedResultsController<Person>) { calls.append("did") }
    func controller(_ controller: FetchedResultsController<Person>, didChangeContentWith snapshot: FetchedResultsSnapshot) {
        snapshots.append(snapshot)
    }
    /// The object changes only (no will/did/sections).
    var objectCalls: [String] { calls.filter { $0 != "will" && $0 != "did" && !$0.contains("section") } }
    func clear() {
        calls = []
        objects = []
        snapshots = []
    }
}

/// A controller on a private context over saved people, with a recorder as delegate.
struct ControllerFixture {
    let dir: TemporaryDirectory
    let coordinator: PersistentStoreCoordinator
    let context: ManagedObjectContext
    let controller: FetchedResultsController<Person>
    let recorder = ChangeRecorder()

    /// People "Ann" (age 1), "Bob" (2), "Cid" (3), "Dan" (4) saved; the controller shows people
    /// with `age < 100`, by name, in sections by initial when `sections`.
    init(
        _ type: StoreType = .sqlite, sections: Bool = false, names: [String] = ["Ann", "Bob", "Cid", "Dan"],
        limit: Int = 0, _ name: String = #function
    ) throws {
        dir = try TemporaryDirectory(name)
        coordinator = try makeCoordinator(type, in: dir)
        context = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: coordinator, name: "frc")
        let request = FetchRequest<Person>(predicate: #Predicate { $0.age < 100 }, sortBy: [SortDescriptor(\.name)], fetchLimit: limit)
        var sectionPath: KeyPath<Person, String>?
        if sections { sectionPath = \Person.initial }
        controller = FetchedResultsController(fetchRequest: request, managedObjectContext: context, sectionNameKeyPath: sectionPath)
        let context = self.context, controller = self.controller, recorder = self.recorder
        try context.performAndWait {
            for (i, n) in names.enumerated() {
                let p = Person(context: context)
                p.name = n
                p.age = i + 1
            }
            try context.save()
            try controller.performFetch()
            controller.delegate = recorder
        }
    }

    /// The names in the results, by section ("A:Ann,B:Bob").
    func layout() -> String {
        context.performAndWait {
            controller.sections.map { s in "\(s.name):" + s.objects.map(\.name).joined(separator: ",") }.joined(separator: " ")
        }
    }

    func person(_ name: String) throws -> Person {
        try context.performAndWait { try #require(controller.fetchedObjects.first { $0.name == name }) }
    }

    /// The names of a fresh fetch of the same request, to compare with the controller's.
    func freshNames() throws -> [String] {
        try context.performAndWait { try context.fetch(controller.fetchRequest).map(\.name) }
    }
}

@Suite struct FetchedResultsControllerTests {
    @Test func performFetchGivesResultsSectionsAndIndexPaths() throws {
        let f = try ControllerFixture(sections: true, names: ["Ann", "Abe", "Bob", "Cid"])
        #expect(f.layout() == "A:Abe,Ann B:Bob C:Cid")
        try f.context.performAndWait {
            let c = f.controller
            #expect(c.fetchedObjects.map(\.name) == ["Abe", "Ann", "Bob", "Cid"])
            #expect(c.sectionNames == ["A", "B", "C"])
            #expect(c.sections.map(\.numberOfObjects) == [2, 1, 1])
            #expect(try c.object(at: IndexPath(item: 1, section: 0)).name == "Ann")
            #expect(try c.object(at: IndexPath(item: 0, section: 2)).name == "Cid")
            let bob = try #require(c.fetchedObjects.first { $0.name == "Bob" })
            #expect(c.indexPath(forObject: bob) == IndexPath(item: 0, section: 1))
            #expect(c.section(forSectionName: "C") == 2)
            let outside = Person(context: f.context)
            #expect(c.indexPath(forObject: outside) == nil)
            f.context.delete(outside)
        }
        #expect(f.controller.snapshot?.sections.map(\.name) == ["A", "B", "C"])
    }

    @Test func anIndexPathOutsideTheResultsIsATypedError() throws {
        let f = try ControllerFixture()
        f.context.performAndWait {
            for path in [
                IndexPath(item: 4, section: 0), IndexPath(item: 0, section: 1), IndexPath(item: -1, section: 0), IndexPath(index: 0)
            ] {
                #expect(throws: CoherenceError.self) { try f.controller.object(at: path) }
                do throws(CoherenceError) {
                    _ = try f.controller.object(at: path)
                } catch {
                    #expect(error.code == .invalidRequest)
                }
            }
        }
    }

    @Test func aRequestWithoutSortDescriptorsIsATypedError() throws {
        let dir = try TemporaryDirectory()
        let context = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: try makeCoordinator(.inMemory, in: dir))
        let controller = FetchedResultsController(fetchRequest: FetchRequest<Person>(), managedObjectContext: context)
        context.performAndWait {
            do throws(CoherenceError) {
                try controller.performFetch()
                Issue.record("performFetch accepted a request without sort descriptors")
            } catch {
                #expect(error.code == .invalidRequest)
                #expect(error.entityName == "Person")
            }
            #expect(controller.fetchedObjects.isEmpty)
            #expect(controller.snapshot == nil)
        }
    }

    @Test func sectionsSplitByTheSortAreATypedError() throws {
        let dir = try TemporaryDirectory()
        let context = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: try makeCoordinator(.sqlite, in: dir))
        // Sorted by age, sectioned by initial: Ann (1), Bob (2), Abe (3) splits section A.
        let controller = FetchedResultsController(
            fetchRequest: FetchRequest<Person>(sortBy: [SortDescriptor(\.age)]), managedObjectContext: context,
            sectionNameKeyPath: \Person.initial)
        try context.performAndWait {
            for (i, n) in ["Ann", "Bob", "Abe"].enumerated() {
                let p = Person(context: context)
                p.name = n
                p.age = i
            }
            try context.save()
            do throws(CoherenceError) {
                try controller.performFetch()
                Issue.record("performFetch accepted split sections")
            } catch {
                #expect(error.code == .invalidRequest)
                #expect(error.message.contains("'A'"))
            }
        }
    }

    @Test(arguments: PostgreSQLTestServer.storeTypes)
    func ownInsertsAreReportedWhereTheySort(_ type: StoreType) throws {
        let f = try ControllerFixture(type)
        f.context.performAndWait {
            let p = Person(context: f.context)
            p.name = "Bea"
            p.age = 5
            let old = Person(context: f.context)
            old.name = "Old"
            old.age = 200  // does not match
        }
        #expect(f.recorder.calls == ["will", "insert ->0.1", "did"])
        #expect(f.recorder.objects == ["insert Bea"])
        #expect(f.layout() == ":Ann,Bea,Bob,Cid,Dan")
        let difference = try #require(f.recorder.snapshots.last?.difference)
        #expect(difference.insertedIndexPaths == [IndexPath(item: 1, section: 0)])
        #expect(f.recorder.snapshots.last?.numberOfObjects == 5)
    }

    @Test func ownDeletesAreReported() throws {
        let f = try ControllerFixture()
        let bob = try f.person("Bob")
        try f.context.performAndWait {
            f.context.delete(bob)
            try f.context.save()
        }
        #expect(f.recorder.objectCalls == ["delete 0.1>-"])
        #expect(f.layout() == ":Ann,Cid,Dan")
        #expect(try f.freshNames() == ["Ann", "Cid", "Dan"])
    }

    @Test func aChangedSortKeyIsAMove() throws {
        let f = try ControllerFixture()
        let ann = try f.person("Ann")
        f.context.performAndWait { ann.name = "Eve" }
        #expect(f.recorder.objectCalls == ["move 0.0>0.3"])
        #expect(f.layout() == ":Bob,Cid,Dan,Eve")
        let moved = try #require(f.recorder.snapshots.last?.difference.movedIndexPaths.first)
        #expect(moved.from == IndexPath(item: 0, section: 0) && moved.to == IndexPath(item: 3, section: 0))
    }

    @Test func aChangeThatKeepsThePlaceIsAnUpdate() throws {
        let f = try ControllerFixture()
        let cid = try f.person("Cid")
        f.context.performAndWait { cid.score = 9 }
        #expect(f.recorder.objectCalls == ["update 0.2>0.2"])
        #expect(f.recorder.snapshots.last?.difference.updatedIndexPaths == [IndexPath(item: 2, section: 0)])
        // A rename that keeps the order is an update too.
        f.recorder.clear()
        f.context.performAndWait { cid.name = "Cox" }
        #expect(f.recorder.objectCalls == ["update 0.2>0.2"])
    }

    @Test func aChangeThatStopsMatchingIsADeleteAndBackAnInsert() throws {
        let f = try ControllerFixture()
        let bob = try f.person("Bob")
        f.context.performAndWait { bob.age = 500 }
        #expect(f.recorder.objectCalls == ["delete 0.1>-"])
        f.recorder.clear()
        f.context.performAndWait { bob.age = 5 }
        #expect(f.recorder.objectCalls == ["insert ->0.1"])
        #expect(f.layout() == ":Ann,Bob,Cid,Dan")
    }

    @Test func sectionsAppearAndGo() throws {
        let f = try ControllerFixture(sections: true)
        #expect(f.layout() == "A:Ann B:Bob C:Cid D:Dan")
        let bob = try f.person("Bob")
        // Bob → Cal: section B goes, Cal joins C.
        f.context.performAndWait { bob.name = "Cal" }
        #expect(f.recorder.calls.contains("delete section 1 B"))
        #expect(f.recorder.objectCalls == ["move 1.0>1.0"])
        #expect(f.layout() == "A:Ann C:Cal,Cid D:Dan")
        // Cal → Zed: a new section Z at the end.
        f.recorder.clear()
        f.context.performAndWait { bob.name = "Zed" }
        #expect(f.recorder.calls.contains("insert section 3 Z"))
        #expect(f.layout() == "A:Ann C:Cid D:Dan Z:Zed")
        let difference = try #require(f.recorder.snapshots.last?.difference)
        #expect(difference.insertedSections == IndexSet([3]))
        #expect(difference.deletedSections.isEmpty)
    }

    @Test func severalChangesAtOnceMatchAFreshFetch() throws {
        let f = try ControllerFixture(sections: true, names: (0..<40).map { String(format: "%c%02d", 65 + $0 % 5, $0) })
        try f.context.performAndWait {
            let all = f.controller.fetchedObjects
            for (i, p) in all.enumerated() {
                switch i % 4 {
                case 0: p.name = String(format: "%c%02d", 70 - i % 5, 99 - i)
                case 1: f.context.delete(p)
                case 2: p.score = Double(i)
                default: break
                }
            }
            for i in 0..<5 {
                let p = Person(context: f.context)
                p.name = "N\(i)"
            }
            _ = try #require(f.controller.snapshot)
        }
        let names = try f.freshNames()
        #expect(f.context.performAndWait { f.controller.fetchedObjects.map(\.name) } == names)
        // Applying the reported difference to the old snapshot's IDs gives the new one.
        let snapshots = f.recorder.snapshots
        #expect(snapshots.count == 1)
        let snapshot = try #require(snapshots.first)
        #expect(snapshot.objectIDs.count == names.count)
        #expect(snapshot.difference.objectChanges.filter { $0.type == .delete }.count == 10)
        #expect(snapshot.difference.objectChanges.filter { $0.type == .insert }.count == 5)
        #expect(snapshot.difference.objectChanges.filter { $0.type == .update }.count >= 10)
    }

    @Test func refreshAndRollbackAreReported() throws {
        let f = try ControllerFixture()
        let ann = try f.person("Ann")
        f.context.performAndWait { ann.name = "Zoe" }
        #expect(f.recorder.objectCalls == ["move 0.0>0.3"])
        f.recorder.clear()
        f.context.performAndWait { f.context.rollback() }
        #expect(f.recorder.objectCalls == ["move 0.3>0.0"])
        f.recorder.clear()
        f.context.performAndWait { ann.name = "Zoe" }
        f.recorder.clear()
        f.context.performAndWait { f.context.refresh(ann, mergeChanges: false) }
        #expect(f.recorder.objectCalls == ["move 0.3>0.0"])
        #expect(f.layout() == ":Ann,Bob,Cid,Dan")
    }

    @Test func aResetFetchesAgainAndReportsByID() throws {
        let f = try ControllerFixture()
        // Another context deletes Dan behind the controller's back (no merge).
        let other = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: f.coordinator)
        try other.performAndWait {
            for p in try other.fetch(FetchRequest<Person>(predicate: #Predicate { $0.name == "Dan" })) { other.delete(p) }
            try other.save()
        }
        #expect(f.recorder.calls.isEmpty)
        f.context.performAndWait { f.context.reset() }
        #expect(f.recorder.objectCalls == ["delete 0.3>-"])
        #expect(f.layout() == ":Ann,Bob,Cid")
        // The results are the context's new objects.
        let ann = try f.person("Ann")
        #expect(ann.managedObjectContext === f.context)
    }

    @Test func savingGivesTheSnapshotPermanentIDs() throws {
        let f = try ControllerFixture()
        f.context.performAndWait {
            let p = Person(context: f.context)
            p.name = "Bea"
        }
        let temporary = try #require(f.recorder.snapshots.last?.objectIDs[1])
        #expect(temporary.isTemporaryID)
        f.recorder.clear()
        try f.context.performAndWait { try f.context.save() }
        let saved = try #require(f.controller.snapshot?.objectIDs[1])
        #expect(!saved.isTemporaryID)
        #expect(f.recorder.snapshots.last?.difference.isEmpty == true)
        #expect(f.recorder.objectCalls.isEmpty)
    }

    @Test func aFetchLimitKeepsTheFirstObjects() throws {
        let f = try ControllerFixture(limit: 3)
        #expect(f.layout() == ":Ann,Bob,Cid")
        f.context.performAndWait {
            let p = Person(context: f.context)
            p.name = "Abe"
        }
        #expect(f.layout() == ":Abe,Ann,Bob")
        #expect(f.recorder.objectCalls == ["delete 0.2>-", "insert ->0.0"])
        // A delete lets the next object in.
        f.recorder.clear()
        let ann = try f.person("Ann")
        f.context.performAndWait { f.context.delete(ann) }
        #expect(f.layout() == ":Abe,Bob,Cid")
    }

    /// A predicate that reads a related object: the controller fetches again after each change,
    /// so a saved change of the related object alone is reported.
    @Test func aRelatedObjectsChangeIsReportedWhenThePredicateReadsIt() throws {
        let dir = try TemporaryDirectory()
        let context = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: try makeCoordinator(.sqlite, in: dir))
        let controller = FetchedResultsController(
            fetchRequest: FetchRequest<Person>(predicate: #Predicate { $0.town?.name == "Oslo" }, sortBy: [SortDescriptor(\.name)]),
            managedObjectContext: context)
        let recorder = ChangeRecorder()
        let town = try context.performAndWait { () throws -> Town in
            let town = Town(context: context)
            town.name = "Bergen"
            for n in ["Ann", "Bob"] {
                let p = Person(context: context)
                p.name = n
                p.town = town
            }
            try context.save()
            try controller.performFetch()
            controller.delegate = recorder
            return town
        }
        #expect(context.performAndWait { controller.fetchedObjects.isEmpty })
        // (A fetch sees a related object's change once it is saved, as in Core Data.)
        try context.performAndWait {
            town.name = "Oslo"
            try context.save()
        }
        #expect(recorder.objectCalls == ["insert ->0.0", "insert ->0.1"])
        #expect(context.performAndWait { controller.fetchedObjects.map(\.name) } == ["Ann", "Bob"])
        // Another context renames the town; the merge names only the town.
        recorder.clear()
        context.performAndWait { context.automaticallyMergesChangesFromParent = true }
        try saveInBackground(context.persistentStoreCoordinator) { c in
            try #require(try c.fetch(FetchRequest<Town>()).first).name = "Bergen"
        }
        context.performAndWait {}
        #expect(recorder.objectCalls == ["delete 0.0>-", "delete 0.1>-"])
    }

    @Test func theSnapshotsStreamStartsWithTheResultsThenEachChange() async throws {
        let f = try ControllerFixture()
        var iterator = f.controller.snapshots.makeAsyncIterator()
        let first = try #require(await iterator.next())
        #expect(first.numberOfObjects == 4)
        #expect(first.difference.isEmpty)
        f.context.performAndWait {
            let p = Person(context: f.context)
            p.name = "Bea"
        }
        let second = try #require(await iterator.next())
        #expect(second.numberOfObjects == 5)
        #expect(second.difference.insertedIndexPaths == [IndexPath(item: 1, section: 0)])
    }

    @Test func aDelegateThatSavesGetsTheNextChangeAfterThisOne() throws {
        let f = try ControllerFixture()
        final class Saver: FetchedResultsControllerDelegate {
            var calls: [String] = []
            let context: ManagedObjectContext
            init(_ context: ManagedObjectContext) { self.context = context }
            func controllerDidChangeContent(_ controller: FetchedResultsController<Person>) {
                calls.append("did \(controller.fetchedObjects.count)")
                if context.hasChanges {
                    for p in controller.fetchedObjects where p.name == "Bea" { p.name = "Zed" }
                    try? context.save()
                }
            }
        }
        let saver = Saver(f.context)
        f.context.performAndWait {
            f.controller.delegate = saver
            let p = Person(context: f.context)
            p.name = "Bea"
        }
        #expect(saver.calls == ["did 5", "did 5"])
        #expect(f.layout() == ":Ann,Bob,Cid,Dan,Zed")
    }

    @Test func theObservableFormChangesWithTheContext() throws {
        let f = try ControllerFixture()
        let results = try f.context.performAndWait {
            try ObservableFetchedResults(
                fetchRequest: FetchRequest<Person>(sortBy: [SortDescriptor(\.name)]), managedObjectContext: f.context)
        }
        let changed = LockedValue(0)
        f.context.performAndWait {
            #expect(results.objects.map(\.name) == ["Ann", "Bob", "Cid", "Dan"])
            withObservationTracking {
                _ = results.objects
            } onChange: {
                changed.withLock { $0 += 1 }
            }
            let p = Person(context: f.context)
            p.name = "Abe"
        }
        #expect(changed.withLock { $0 } == 1)
        f.context.performAndWait {
            #expect(results.objects.map(\.name) == ["Abe", "Ann", "Bob", "Cid", "Dan"])
            #expect(results.sections.count == 1)
            #expect(results.difference.insertedIndexPaths == [IndexPath(item: 0, section: 0)])
        }
    }
}
