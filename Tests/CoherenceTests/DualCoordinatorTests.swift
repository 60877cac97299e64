import Foundation
import Testing
@testable import Coherence
@testable import CoherenceBase
@testable import CoherenceContext
@testable import CoherenceSQLite
@testable import CoherenceStore

// The dual-coordinator container (Ambar's shape): its contexts, their policies, the merge
// rule, enforced read-only and temporary contexts, the in-memory case, the move initializer.

/// A dual-coordinator container on a SQLite file (or in memory) in the test's directory, or in
/// a PostgreSQL schema of the test.
func dualContainer(_ dir: TemporaryDirectory, _ type: StoreType = .sqlite) throws -> DualCoordinatorContainer {
    try DualCoordinatorContainer(
        storeType: type, modelName: "People", managedObjectModel: try makeTestModel(),
        storeURL: type == .postgreSQL ? try dir.postgreSQLURL("people") : dir.file("people.sqlite"))
}

/// Inserts people named `names` in `context` and saves.
func savePeople(_ names: [String], in context: ManagedObjectContext) throws {
    try context.performAndWait {
        for n in names { Person(context: context).name = n }
        try context.save()
    }
}

/// The bytes of a store file and its write-ahead log.
func storeBytes(_ url: URL) -> [Data?] {
    [url, URL(fileURLWithPath: url.path + "-wal")].map { FileManager.default.contents(atPath: $0.path) }
}

/// Runs the view context's queued work (merges are queued on it) and then `body` there.
func onView<T: Sendable>(_ container: DualCoordinatorContainer, _ body: @escaping @Sendable () throws -> T) async throws -> T {
    let view = container.viewContext
    return try await view.perform(schedule: .enqueued) { try body() }
}

@Suite struct DualCoordinatorTests {
    @Test func theContainerHasTwoCoordinatorsOnOneFile() throws {
        let dir = try TemporaryDirectory()
        let container = try dualContainer(dir)
        #expect(container.writerCoordinator !== container.persistentStoreCoordinator)
        #expect(container.storeURL == dir.file("people.sqlite"))
        let main = try #require(container.persistentStoreCoordinator.persistentStores.first)
        let writer = try #require(container.writerCoordinator.persistentStores.first)
        #expect(main.url?.standardizedFileURL == writer.url?.standardizedFileURL)
        #expect(main.identifier == writer.identifier)
        #expect(container.name == "People")
    }

    @Test(arguments: storedTypes) func eachContextKindHasItsPolicyAndCoordinator(_ type: StoreType) async throws {
        let dir = try TemporaryDirectory()
        let container = try dualContainer(dir, type)
        #expect(container.viewContext.mergePolicy === MergePolicy.mergeByPropertyStoreTrump)
        #expect(container.viewContext.concurrencyType == .mainQueue)
        let importer = container.importerContext()
        #expect(importer.mergePolicy === MergePolicy.mergeByPropertyObjectTrump)
        #expect(importer.persistentStoreCoordinator === container.writerCoordinator)
        #expect(container.newBackgroundContext().persistentStoreCoordinator === container.writerCoordinator)
        let temporary = container.temporaryContext()
        #expect(temporary.mergePolicy === MergePolicy.rollback)
        #expect(temporary.persistentStoreCoordinator === container.persistentStoreCoordinator)
        #expect(temporary.concurrencyType == .privateQueue)
        let editor = try await MainActor.run { try container.editorContext() }
        #expect(editor.mergePolicy === MergePolicy.mergeByPropertyObjectTrump)
        #expect(editor.parent === container.viewContext)
        await MainActor.run {
            container.isViewContextReadOnly = true
            #expect(container.viewContext.mergePolicy === MergePolicy.rollback)
            container.isViewContextReadOnly = true  // the same value: nothing changes
            #expect(container.viewContext.mergePolicy === MergePolicy.rollback)
            container.isViewContextReadOnly = false
            #expect(container.viewContext.mergePolicy === MergePolicy.mergeByPropertyStoreTrump)
        }
    }

    @Test(arguments: storedTypes) func importerSavesAreMergedIntoTheViewContext(_ type: StoreType) async throws {
        let dir = try TemporaryDirectory()
        let container = try dualContainer(dir, type)
        let view = container.viewContext
        // The view context holds Ann (loaded), whose row its coordinator caches.
        try savePeople(["Ann"], in: container.importerContext())
        let annID = try await onView(container) { () throws -> ObjectID in
            let ann = try #require(try fetchPerson("Ann", in: view))
            #expect(ann.age == 0)
            return ann.objectID
        }
        let importer = container.importerContext()
        try importer.performAndWait {
            try #require(try fetchPerson("Ann", in: importer)).age = 41
            Person(context: importer).name = "Bob"
            try importer.save()
        }
        let (age, count) = try await onView(container) { () throws -> (Int, Int) in
            let ann = try #require(view.registeredObject(for: annID) as? Person)
            return (ann.age, try view.count(for: FetchRequest<Person>()))
        }
        #expect(age == 41)
        #expect(count == 2)
    }

    @Test(arguments: storedTypes) func onlyWriterSavesAreMergedNotMainSideOrOwnSaves(_ type: StoreType) async throws {
        let dir = try TemporaryDirectory()
        let container = try dualContainer(dir, type)
        let view = container.viewContext
        let merged = LockedValue<[Set<ObjectID>]>([])
        let observer = NotificationCenter.default.addObserver(
            forName: ManagedObjectContext.objectsDidChangeNotification, object: view, queue: nil
        ) { note in
            // Merges list the IDs they carry; the view context's own edits list objects too.
            let info = note.userInfo ?? [:]
            if info[ManagedObjectContext.NotificationKey.insertedObjects] == nil,
                let ids = info[ManagedObjectContext.NotificationKey.insertedObjectIDs] as? Set<ObjectID>
            {
                merged.withLock { $0.append(ids) }
            }
        }
        defer { NotificationCenter.default.removeObserver(observer) }
        // A context on the main coordinator (not the writer): not merged.
        try savePeople(
            ["MainSide"], in: ManagedObjectContext(concurrencyType: .privateQueue, coordinator: container.persistentStoreCoordinator))
        // The view context's own save and its editor's: never merged back.
        try await onView(container) {
            Person(context: view).name = "Own"
            try view.save()
        }
        let editor = try await MainActor.run { try container.editorContext() }
        try savePeople(["Edited"], in: editor)
        try await container.waitForPendingSaves()
        _ = try await onView(container) {}
        #expect(merged.withLock { $0 }.isEmpty)
        // A writer save: merged once.
        try savePeople(["Imported"], in: container.importerContext())
        _ = try await onView(container) {}
        #expect(merged.withLock { $0.count } == 1)
        #expect(merged.withLock { $0.first?.count } == 1)
        // Everything reached the file.
        let names = try container.writerCoordinator.fetchObjectIDs(FetchRequest<Person>()).count
        #expect(names == 4)
    }

    @Test(arguments: storedTypes) func writerSavesAreMergedInOrder(_ type: StoreType) async throws {
        let dir = try TemporaryDirectory()
        let container = try dualContainer(dir, type)
        let view = container.viewContext
        let seen = LockedValue<[Set<ObjectID>]>([])
        let observer = NotificationCenter.default.addObserver(
            forName: ManagedObjectContext.objectsDidChangeNotification, object: view, queue: nil
        ) { note in
            if let ids = note.userInfo?[ManagedObjectContext.NotificationKey.insertedObjectIDs] as? Set<ObjectID> {
                seen.withLock { $0.append(ids) }
            }
        }
        defer { NotificationCenter.default.removeObserver(observer) }
        var saved: [Set<ObjectID>] = []
        for i in 1...5 {
            let importer = container.importerContext()
            saved.append(
                try importer.performAndWait { () throws -> Set<ObjectID> in
                    let p = Person(context: importer)
                    p.name = "P\(i)"
                    try importer.save()
                    return [p.objectID]
                })
        }
        _ = try await onView(container) {}
        #expect(seen.withLock { $0 } == saved)
    }

    @Test func aReadOnlyViewContextAndATemporaryContextNeverWrite() async throws {
        let dir = try TemporaryDirectory()
        let container = try dualContainer(dir)
        let view = container.viewContext
        try savePeople(["Ann"], in: container.importerContext())
        let url = try #require(container.storeURL)
        let before = storeBytes(url)
        #expect(before[0] != nil)
        await MainActor.run { container.isViewContextReadOnly = true }
        // Inserts and updates from the read-only view context: refused (Ambar writes them).
        let viewError = try await onView(container) { () throws -> CoherenceError? in
            Person(context: view).name = "Inserted"
            try #require(try fetchPerson("Ann", in: view)).age = 9
            do throws(CoherenceError) { try view.save() } catch { return error }
            return nil
        }
        #expect(viewError?.code == .readOnlyContext)
        #expect(try await onView(container) { view.hasChanges })
        // An editor context: none while read-only.
        do {
            _ = try await MainActor.run { try container.editorContext() }
            Issue.record("an editor context was made while the view context is read-only")
        } catch let error as CoherenceError {
            #expect(error.code == .readOnlyContext)
        }
        // A temporary context: never.
        let temporary = container.temporaryContext()
        let temporaryError = temporary.performAndWait { () -> CoherenceError? in
            Person(context: temporary).name = "Scratch"
            do throws(CoherenceError) { try temporary.save() } catch { return error }
            return nil
        }
        #expect(temporaryError?.code == .readOnlyContext)
        #expect(temporary.performAndWait { temporary.hasChanges })
        #expect(storeBytes(url) == before)
        #expect(try container.writerCoordinator.count(for: FetchRequest<Person>()) == 1)
        // Writable again: the view context's changes are saved.
        await MainActor.run { container.isViewContextReadOnly = false }
        try await onView(container) { try view.save() }
        #expect(try container.writerCoordinator.count(for: FetchRequest<Person>()) == 2)
    }

    @Test func anEditorMadeBeforeReadOnlyRefusesItsSave() async throws {
        let dir = try TemporaryDirectory()
        let container = try dualContainer(dir)
        let editor = try await MainActor.run { try container.editorContext() }
        await MainActor.run { container.isViewContextReadOnly = true }
        let error = editor.performAndWait { () -> CoherenceError? in
            Person(context: editor).name = "Draft"
            do throws(CoherenceError) { try editor.save() } catch { return error }
            return nil
        }
        #expect(error?.code == .readOnlyContext)
        #expect(try await onView(container) { container.viewContext.hasChanges } == false)
    }

    @Test func anEditorSaveReachesTheFileThroughTheViewContext() async throws {
        let dir = try TemporaryDirectory()
        let container = try dualContainer(dir)
        let editor = try await MainActor.run { try container.editorContext() }
        try savePeople(["Draft"], in: editor)
        try await container.waitForPendingSaves()
        #expect(try container.writerCoordinator.count(for: FetchRequest<Person>()) == 1)
    }

    @Test func inMemoryOneCoordinatorServesBoth() async throws {
        let dir = try TemporaryDirectory()
        let container = try dualContainer(dir, .inMemory)
        #expect(container.storeURL == nil)
        #expect(container.writerCoordinator === container.persistentStoreCoordinator)
        #expect(!FileManager.default.fileExists(atPath: dir.file("people.sqlite").path))
        let view = container.viewContext
        let merges = LockedValue(0)
        let observer = NotificationCenter.default.addObserver(
            forName: ManagedObjectContext.objectsDidChangeNotification, object: view, queue: nil
        ) { note in
            if note.userInfo?[ManagedObjectContext.NotificationKey.insertedObjects] == nil { merges.withLock { $0 += 1 } }
        }
        defer { NotificationCenter.default.removeObserver(observer) }
        try await onView(container) {
            Person(context: view).name = "Own"
            try view.save()
        }
        _ = try await onView(container) {}
        #expect(merges.withLock { $0 } == 0)  // the view context's own save is not merged back
        try savePeople(["Imported"], in: container.importerContext())
        #expect(try await onView(container) { try view.count(for: FetchRequest<Person>()) } == 2)
        #expect(merges.withLock { $0 } == 1)
    }

    @Test func theMoveInitializerMovesTheFileWithItsCompanions() throws {
        let dir = try TemporaryDirectory()
        let old = dir.file("old/people.sqlite"), new = dir.file("shared/group/people.sqlite")
        do {
            let first = try DualCoordinatorContainer(managedObjectModel: try makeTestModel(), storeURL: old)
            try savePeople(["Ann", "Bob"], in: first.importerContext())
            #expect(FileManager.default.fileExists(atPath: old.path + "-wal"))
        }
        let moved = try DualCoordinatorContainer(managedObjectModel: try makeTestModel(), migratingFrom: old, to: new)
        #expect(moved.storeURL == new)
        #expect(try moved.writerCoordinator.count(for: FetchRequest<Person>()) == 2)
        for suffix in ["", "-wal", "-shm"] { #expect(!FileManager.default.fileExists(atPath: old.path + suffix)) }
        // Nothing at the old location any more: a second move just opens the new store.
        let again = try DualCoordinatorContainer(managedObjectModel: try makeTestModel(), migratingFrom: old, to: new)
        #expect(try again.persistentStoreCoordinator.count(for: FetchRequest<Person>()) == 2)
    }

    @Test func aContainerWithoutAModelIsATypedError() throws {
        do throws(CoherenceError) {
            _ = try DualCoordinatorContainer(storeType: .inMemory)
            Issue.record("a container without a model was made")
        } catch {
            #expect(error.code == .invalidRequest)
        }
        do throws(CoherenceError) {
            _ = try DualCoordinatorContainer(storeType: .inMemory, modelName: "NoSuchModel")
            Issue.record("a container with a missing model was made")
        } catch {
            #expect(error.code == .invalidRequest)
            #expect(error.underlyingErrors.first is ModelError)
        }
    }

    /// A view context holding 10 objects while 100,000 are imported: it registers nothing more,
    /// and a controller on it reports the imported objects that match it. (Clubs: one attribute
    /// each, so that the import stays cheap next to the other tests.)
    @Test func aLargeImportCostsTheViewContextOnlyWhatItHolds() async throws {
        let dir = try TemporaryDirectory()
        let container = try dualContainer(dir)
        let view = container.viewContext
        let held = container.importerContext()
        try held.performAndWait {
            for i in 0..<10 { Club(context: held).title = "held \(i)" }
            try held.save()
        }
        let controller = FetchedResultsController(
            fetchRequest: FetchRequest<Club>(predicate: #Predicate { $0.title < "b" }, sortBy: [SortDescriptor(\.title)]),
            managedObjectContext: view)
        var snapshots = controller.snapshots.makeAsyncIterator()
        try await onView(container) {
            _ = try view.fetch(FetchRequest<Club>())
            try controller.performFetch()
        }
        #expect(await snapshots.next()?.numberOfObjects == 0)
        let importer = container.importerContext()
        // On a thread of its own: the import is long (most of all under the thread sanitizer) and
        // must not hold one of the cooperative pool's few threads that other tests wait on.
        let failure: String? = await onOwnThread {
            do {
                try importer.performAndWait {
                    for i in 0..<100_000 { Club(context: importer).title = i % 1000 == 0 ? "a \(i)" : "x \(i)" }
                    try importer.save()
                }
                return nil
            } catch { return "\(error)" }
        }
        #expect(failure == nil)
        let (registered, shown) = try await onView(container) { (view.registeredObjects.count, controller.fetchedObjects.count) }
        #expect(shown == 100)
        #expect(registered == 110)  // the 10 it held and the 100 the controller shows
        let snapshot = await snapshots.next()
        #expect(snapshot?.difference.insertedIndexPaths.count == 100)
    }

    @Test func localInstanceFindsTheObjectInAnotherCoordinatorsContext() async throws {
        let dir = try TemporaryDirectory()
        let container = try dualContainer(dir)
        let importer = container.importerContext()
        let ann = try importer.performAndWait { () throws -> Person in
            let p = Person(context: importer)
            p.name = "Ann"
            let temporary = container.temporaryContext()
            do throws(CoherenceError) {
                _ = try temporary.performAndWait { () throws(CoherenceError) -> Person in try temporary.localInstance(of: p) }
                Issue.record("an unsaved object had a local instance")
            } catch {
                #expect(error.code == .objectNotFound)
            }
            try importer.save()
            return p
        }
        nonisolated(unsafe) let imported = ann
        let view = container.viewContext
        let name = try await onView(container) { () throws -> String in
            let local = try view.localInstance(of: imported)
            #expect(local.managedObjectContext === view)
            #expect(try view.localInstance(of: local) === local)
            return local.name
        }
        #expect(name == "Ann")
    }
}

/// Records the coordinator of the action context it runs in.
final class CoordinatorProbe: EntityAction, @unchecked Sendable {
    typealias ManagedObjectType = Item
    let seen = LockedValue<PersistentStoreCoordinator?>(nil)
    func execute(context: ActionContext) throws {
        seen.withLock { $0 = context.persistentStoreCoordinator }
        try context.merge(objects: [["sku": "A1", "title": "From an action"]], for: Item.self)
    }
}

@Suite struct DualCoordinatorStrategyTests {
    /// The strategy in a `GenericConnect`: actions run on the writer coordinator, and their
    /// saves reach the view context.
    @Test func actionsRunOnTheWriterCoordinator() async throws {
        let dir = try TemporaryDirectory()
        let model = try ManagedObjectModel(types: [Item.self, Memo.self])
        let connect = GenericConnect<ContextStrategy.DualCoordinator>(name: "Dual", managedObjectModel: model)
        connect.storeLocation = dir.url
        try connect.start()
        let writer = connect.strategy.writerCoordinator
        #expect(writer !== connect.persistentStoreCoordinator)
        let probe = CoordinatorProbe()
        let proxy = try connect.execute(probe, completionBlock: nil)
        proxy.waitUntilFinished()
        #expect(proxy.error == nil)
        #expect(probe.seen.withLock { $0 } === writer)
        let view = connect.viewContext
        let count = try await view.perform(schedule: .enqueued) { try view.count(for: FetchRequest<Item>()) }
        #expect(count == 1)
        try connect.stop()
    }

    /// Stores attached after the writer coordinator was made are opened on it at its next use,
    /// and detached ones closed.
    @Test func theWriterCoordinatorFollowsTheAttachedStores() throws {
        let dir = try TemporaryDirectory()
        let model = try ManagedObjectModel(types: [Person.self, Town.self, Club.self])
        let container = GenericPersistentContainer<ContextStrategy.DualCoordinator>(name: "Dual", managedObjectModel: model)
        container.storeLocation = dir.url
        #expect(container.strategy.writerCoordinator === container.persistentStoreCoordinator)  // no store yet
        let first = try container.attachPersistentStore()
        #expect(container.strategy.writerCoordinator.persistentStores.count == 1)
        let second = try container.attachPersistentStore(for: StoreConfiguration(fileName: "second.sqlite"))
        #expect(container.strategy.writerCoordinator.persistentStores.count == 2)
        try container.detach(persistentStore: second)
        #expect(container.strategy.writerCoordinator.persistentStores.map(\.url) == [first.url])
    }
}

@Suite struct ManagedObjectTypeTests {
    @Test func theTypedHelpersFetchCountFindAndDelete() throws {
        let dir = try TemporaryDirectory()
        let context = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: try makeCoordinator(.sqlite, in: dir))
        try context.performAndWait {
            for (i, n) in ["Ann", "Bob", "Cid", "Bob"].enumerated() {
                let p = Person(context: context)
                p.name = n
                p.age = i
            }
            try context.save()
            context.reset()
            #expect(try Person.fetch(in: context, sortedWith: [SortDescriptor(\.age)]).map(\.name) == ["Ann", "Bob", "Cid", "Bob"])
            #expect(try Person.count(in: context, predicate: #Predicate { $0.name == "Bob" }) == 2)
            context.reset()
            // find: only loaded objects, nil when none or several match.
            #expect(try Person.find(in: context, predicate: #Predicate { $0.name == "Ann" }) == nil)
            let ann = try #require(try Person.findOrFetch(in: context, predicate: #Predicate { $0.name == "Ann" }))
            #expect(try Person.find(in: context, predicate: #Predicate { $0.name == "Ann" }) === ann)
            _ = try Person.fetch(in: context, returnsObjectsAsFaults: false)
            #expect(try Person.find(in: context, predicate: #Predicate { $0.name == "Bob" }) == nil)
            #expect(try Person.fetchDistinctValues(of: \.name, in: context) == ["Ann", "Bob", "Cid"])
            let controller = try Person.fetchedResultsController(in: context, sortedWith: [SortDescriptor(\.name)])
            try controller.performFetch()
            #expect(controller.fetchedObjects.count == 4)
            #expect(try Person.delete(in: context, predicate: #Predicate { $0.name == "Bob" }) == 2)
            context.processPendingChanges()
            #expect(controller.fetchedObjects.map(\.name) == ["Ann", "Cid"])
            try context.save()
            #expect(try Person.count(in: context) == 2)
            do throws(CoherenceError) {
                _ = try Person.fetchedResultsController(in: context, sortedWith: [])
                Issue.record("a controller without sort descriptors was made")
            } catch {
                #expect(error.code == .invalidRequest)
            }
        }
    }
}
