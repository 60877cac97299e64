import Foundation
import Testing
@testable import Coherence
@testable import CoherenceBase
@testable import CoherenceContext
@testable import CoherenceSQLite
@testable import CoherenceStore

// The fetched-results controller and merges: from another context, another coordinator
// (through persistent history) and another process; objects the context had not loaded.

/// Saves people in a new private context of `coordinator`: `edit` runs on its executor.
func saveInBackground(_ coordinator: PersistentStoreCoordinator, _ edit: (ManagedObjectContext) throws -> Void) throws {
    let background = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: coordinator, name: "background")
    try background.performAndWait {
        try edit(background)
        try background.save()
    }
}

/// The person named `name` in `context` (fetched there).
func fetchPerson(_ name: String, in context: ManagedObjectContext) throws -> Person? {
    try context.fetch(FetchRequest<Person>(predicate: #Predicate { $0.name == name })).first
}

@Suite struct FetchedResultsControllerMergeTests {
    @Test func anotherContextsSaveIsReported() throws {
        let f = try ControllerFixture()
        f.context.performAndWait { f.context.automaticallyMergesChangesFromParent = true }
        try saveInBackground(f.coordinator) { c in
            let p = Person(context: c)
            p.name = "Bea"
            try #require(try fetchPerson("Ann", in: c)).name = "Zoe"  // a move
            try #require(try fetchPerson("Cid", in: c)).score = 5  // an update
            c.delete(try #require(try fetchPerson("Dan", in: c)))
        }
        f.context.performAndWait {}  // the merge was queued during the save
        #expect(f.layout() == ":Bea,Bob,Cid,Zoe")
        #expect(try f.freshNames() == ["Bea", "Bob", "Cid", "Zoe"])
        #expect(Set(f.recorder.objects) == ["insert Bea", "move Zoe", "update Cid", "delete Dan"])
        #expect(f.recorder.calls.first == "will" && f.recorder.calls.last == "did")
        // One round for the whole save.
        #expect(f.recorder.snapshots.count == 1)
    }

    /// Core Data's controller misses these: the context never loaded the object, and a merge
    /// only refreshes registered objects.
    @Test(arguments: PostgreSQLTestServer.storeTypes)
    func anUnloadedObjectThatStartsToMatchIsReported(_ type: StoreType) throws {
        let f = try ControllerFixture(type)
        f.context.performAndWait { f.context.automaticallyMergesChangesFromParent = true }
        // Saved outside the results (age 500), never loaded by the controller's context.
        try saveInBackground(f.coordinator) { c in
            for name in ["Old", "Older"] {
                let p = Person(context: c)
                p.name = name
                p.age = 500
            }
        }
        f.context.performAndWait {}
        #expect(f.recorder.calls.isEmpty)
        let oldID = try f.context.performAndWait { try #require(try fetchPersonID("Old", f.coordinator)) }
        f.context.performAndWait { #expect(f.context.registeredObject(for: oldID) == nil) }
        try saveInBackground(f.coordinator) { c in
            try #require(try fetchPerson("Old", in: c)).age = 7
            try #require(try fetchPerson("Older", in: c)).score = 1  // still does not match
        }
        f.context.performAndWait {}
        #expect(f.recorder.objects == ["insert Old"])
        #expect(f.layout() == ":Ann,Bob,Cid,Dan,Old")
        // The object that still does not match was not loaded into the context.
        let olderID = try f.context.performAndWait { try #require(try fetchPersonID("Older", f.coordinator)) }
        f.context.performAndWait { #expect(f.context.registeredObject(for: olderID) == nil) }
        // And back out.
        f.recorder.clear()
        try saveInBackground(f.coordinator) { c in try #require(try fetchPerson("Old", in: c)).age = 600 }
        f.context.performAndWait {}
        #expect(f.recorder.objects == ["delete Old"])
        #expect(f.layout() == ":Ann,Bob,Cid,Dan")
    }

    /// Another coordinator on the same file: its transactions reach the context through
    /// persistent history.
    @Test func anotherCoordinatorsSaveIsReportedThroughHistory() throws {
        let dir = try TemporaryDirectory()
        let url = dir.file("people.sqlite")
        let model = try makeTestModel()
        func coordinator() throws -> PersistentStoreCoordinator {
            let c = PersistentStoreCoordinator(managedObjectModel: model)
            try c.addPersistentStore(type: .sqlite, at: url, options: StoreOptions(persistentHistoryTracking: true))
            return c
        }
        let mine = try coordinator(), theirs = try coordinator()
        try saveInBackground(mine) { c in
            for (i, name) in ["Ann", "Bob", "Cid"].enumerated() {
                let p = Person(context: c)
                p.name = name
                p.age = i
            }
        }
        let view = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: mine, name: "view")
        let controller = FetchedResultsController(
            fetchRequest: FetchRequest<Person>(predicate: #Predicate { $0.age < 100 }, sortBy: [SortDescriptor(\.name)]),
            managedObjectContext: view, sectionNameKeyPath: \Person.initial)
        let recorder = ChangeRecorder()
        let token = try view.performAndWait {
            try controller.performFetch()
            controller.delegate = recorder
            return try mine.currentPersistentHistoryToken(fromStores: nil)
        }
        try saveInBackground(theirs) { c in
            let p = Person(context: c)
            p.name = "Dot"
            try #require(try fetchPerson("Bob", in: c)).name = "Eve"
            c.delete(try #require(try fetchPerson("Ann", in: c)))
        }
        try view.performAndWait {
            for transaction in try view.execute(PersistentHistoryChangeRequest.fetchHistory(after: token)).transactions {
                view.mergeChanges(fromContextDidSave: transaction.objectIDNotification())
            }
        }
        #expect(view.performAndWait { controller.fetchedObjects.map(\.name) } == ["Cid", "Dot", "Eve"])
        #expect(Set(recorder.objects) == ["insert Dot", "move Eve", "delete Ann"])
        #expect(recorder.calls.contains("delete section 0 A") && recorder.calls.contains("insert section 2 E"))
        #expect(view.performAndWait { controller.sectionNames } == ["C", "D", "E"])
    }

    /// Another process writes the file; the context merges its history after the remote-change
    /// notification, and the controller reports the notes it never loaded.
    @Test func anotherProcessesSavesAreReported() async throws {
        let dir = try TemporaryDirectory()
        let url = dir.file("notes.sqlite")
        let coordinator = PersistentStoreCoordinator(managedObjectModel: try ManagedObjectModel(types: [RemoteNote.self]))
        try coordinator.addPersistentStore(
            type: .sqlite, at: url, options: StoreOptions(persistentHistoryTracking: true, remoteChangeNotificationPost: true))
        let heard = RemoteChangeRecorder(coordinator)
        let view = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: coordinator, name: "view")
        let controller = FetchedResultsController(
            fetchRequest: FetchRequest<RemoteNote>(sortBy: [SortDescriptor(\.sequence)]), managedObjectContext: view)
        let token = try view.performAndWait {
            try controller.performFetch()
            return try coordinator.currentPersistentHistoryToken(fromStores: nil)
        }
        var snapshots = controller.snapshots.makeAsyncIterator()
        #expect(await snapshots.next()?.numberOfObjects == 0)
        let child = try WriterProcess(store: url, author: "child", ["--inserts", "3", "--history"])
        #expect(await child.waitForLine("DONE"))
        #expect(await heard.waitForStreamed(1))
        try view.performAndWait {
            for transaction in try view.execute(PersistentHistoryChangeRequest.fetchHistory(after: token)).transactions {
                view.mergeChanges(fromContextDidSave: transaction.objectIDNotification())
            }
        }
        // The merges ran on the view context's queue, and the controller with them.
        #expect(view.performAndWait { controller.fetchedObjects.map(\.sequence) } == [1, 2, 3])
        #expect(controller.snapshot?.numberOfObjects == 3)
        let next = try #require(await snapshots.next())
        #expect(next.difference.insertedIndexPaths.count >= 1)
        #expect(await child.finish().status == 0)
    }
}

/// The ID of the person named `name`, read through the coordinator (registering nothing).
func fetchPersonID(_ name: String, _ coordinator: PersistentStoreCoordinator) throws -> ObjectID? {
    try coordinator.fetchObjectIDs(FetchRequest<Person>(predicate: #Predicate { $0.name == name })).first
}
