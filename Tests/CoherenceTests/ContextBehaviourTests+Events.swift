import Foundation
import Testing
@testable import Coherence
@testable import CoherenceBase
@testable import CoherenceContext
@testable import CoherenceSQLite
@testable import CoherenceStore

// Notifications, the events stream, lifecycle hooks, merging saves, concurrency.

/// What an ObjectsDidChange / save notification carried, as Sendable values.
struct NotedChange: Sendable {
    var name: Notification.Name
    var inserted: Set<ObjectID> = []
    var updated: Set<ObjectID> = []
    var deleted: Set<ObjectID> = []
    var refreshed: Set<ObjectID> = []
    /// IDs of the `Set<ManagedObject>` values, by key (nil when the key is absent).
    var objects: [String: Set<ObjectID>] = [:]
    var permanentIDs: [ObjectID: ObjectID] = [:]

    init(_ note: Notification) {
        typealias Key = ManagedObjectContext.NotificationKey
        name = note.name
        let info = note.userInfo ?? [:]
        inserted = info[Key.insertedObjectIDs] as? Set<ObjectID> ?? []
        updated = info[Key.updatedObjectIDs] as? Set<ObjectID> ?? []
        deleted = info[Key.deletedObjectIDs] as? Set<ObjectID> ?? []
        refreshed = info[Key.refreshedObjectIDs] as? Set<ObjectID> ?? []
        permanentIDs = info[Key.permanentObjectIDs] as? [ObjectID: ObjectID] ?? [:]
        for key in [Key.insertedObjects, Key.updatedObjects, Key.deletedObjects, Key.refreshedObjects] {
            if let set = info[key] as? Set<ManagedObject> { objects[key] = Set(set.map(\.objectID)) }
        }
    }
}

/// Observes notifications of one context until `stop()`.
final class NotificationRecorder: @unchecked Sendable {
    // @unchecked Sendable: the observer tokens are only touched by the test that owns the recorder.
    let changes = Collector<NotedChange>()
    private var tokens: [any NSObjectProtocol] = []

    init(_ names: [Notification.Name], object: ManagedObjectContext) {
        for name in names {
            let changes = self.changes
            tokens.append(
                NotificationCenter.default.addObserver(forName: name, object: object, queue: nil) { note in
                    changes.append(NotedChange(note))
                })
        }
    }

    func stop() {
        for t in tokens { NotificationCenter.default.removeObserver(t) }
        tokens = []
    }

    deinit { stop() }
}

/// An entity that counts its lifecycle calls.
final class Hooked: ManagedObject {
    @Attribute var name: String = ""
    @Attribute var stamp: Int = 0
    var awakeFromInsertCount = 0
    var awakeFromFetchCount = 0
    var willSaveCount = 0
    var didSaveCount = 0
    var prepareForDeletionCount = 0

    struct Refused: Error {}

    override func awakeFromInsert() {
        awakeFromInsertCount += 1
        name = "new"
    }
    override func awakeFromFetch() { awakeFromFetchCount += 1 }
    override func willSave() {
        willSaveCount += 1
        if !isDeleted { stamp += 1 }  // changes made here are saved
    }
    override func didSave() { didSaveCount += 1 }
    override func prepareForDeletion() { prepareForDeletionCount += 1 }
    override func validateForUpdate() throws {
        if name == "bad" { throw Refused() }
    }
}

/// An entity whose `willSave` inserts a companion object (once).
final class Spawner: ManagedObject {
    @Attribute var name: String = ""
    override func willSave() {
        guard name == "parent", let context = managedObjectContext else { return }
        name = "spawned"
        let child = Spawner(context: context)
        child.name = "child"
    }
}

@Suite("Context behaviour: notifications and events")
struct ContextBehaviourNotificationTests {
    @Test func objectsDidChangeIsPostedWhenTheOutermostBlockEnds() async throws {
        let dir = try TemporaryDirectory()
        let context = try makeContext(dir)
        let recorder = NotificationRecorder([ManagedObjectContext.objectsDidChangeNotification], object: context)
        defer { recorder.stop() }
        let inserted = await context.perform { () -> Set<ObjectID> in
            let a = Person(context: context)
            a.name = "A"
            let b = Person(context: context)
            b.name = "B"
            let c = context.performAndWait { () -> Person in
                let c = Person(context: context)
                c.name = "C"
                return c
            }
            // Nothing posted while the outermost block runs, not even after the nested one.
            #expect(recorder.changes.count == 0)
            return [a.objectID, b.objectID, c.objectID]
        }
        #expect(recorder.changes.count == 1)
        let first = try #require(recorder.changes.all.first)
        #expect(first.inserted == inserted)
        #expect(first.objects[ManagedObjectContext.NotificationKey.insertedObjects] == inserted)
        #expect(first.updated.isEmpty && first.deleted.isEmpty)

        let ids = try await context.perform { () throws -> (ObjectID, ObjectID) in
            try context.save()
            let people = try context.fetch(FetchRequest<Person>(sortBy: [SortDescriptor(\.name)]))
            return (people[0].objectID, people[1].objectID)
        }
        let before = recorder.changes.count
        await context.perform {
            (context.registeredObject(for: ids.0) as? Person)?.age = 5
            if let b = context.registeredObject(for: ids.1) { context.delete(b) }
        }
        #expect(recorder.changes.count == before + 1)
        let change = try #require(recorder.changes.all.last)
        #expect(change.updated == [ids.0])
        #expect(change.deleted == [ids.1])
        #expect(change.inserted.isEmpty)
        #expect(change.objects[ManagedObjectContext.NotificationKey.updatedObjects] == [ids.0])

        await context.perform {
            context.rollback()
            if let a = context.registeredObject(for: ids.0) { context.refresh(a, mergeChanges: false) }
        }
        #expect(recorder.changes.all.last?.refreshed.contains(ids.0) == true)
    }

    @Test func willSaveAndDidSaveCarryObjectsAndPermanentIDs() async throws {
        let dir = try TemporaryDirectory()
        let context = try makeContext(dir)
        let (kept, doomed) = try await context.perform { () throws -> (ObjectID, ObjectID) in
            let a = Person(context: context)
            a.name = "A"
            let c = Person(context: context)
            c.name = "C"
            try context.save()
            return (a.objectID, c.objectID)
        }
        let recorder = NotificationRecorder(
            [
                ManagedObjectContext.willSaveNotification, ManagedObjectContext.didSaveNotification,
                ManagedObjectContext.didSaveObjectIDsNotification
            ], object: context)
        defer { recorder.stop() }
        let (temporary, permanent) = try await context.perform { () throws -> (ObjectID, ObjectID) in
            let x = Person(context: context)
            x.name = "X"
            let temporary = x.objectID
            (context.registeredObject(for: kept) as? Person)?.age = 9
            if let c = context.registeredObject(for: doomed) { context.delete(c) }
            try context.save()
            return (temporary, x.objectID)
        }
        #expect(temporary.isTemporaryID && !permanent.isTemporaryID)
        let notes = recorder.changes.all
        #expect(
            notes.map(\.name) == [
                ManagedObjectContext.willSaveNotification, ManagedObjectContext.didSaveNotification,
                ManagedObjectContext.didSaveObjectIDsNotification
            ])
        guard notes.count == 3 else { return }
        let (will, did, didIDs) = (notes[0], notes[1], notes[2])
        #expect(will.inserted == [temporary])
        #expect(will.updated == [kept])
        #expect(will.deleted == [doomed])
        typealias Key = ManagedObjectContext.NotificationKey
        #expect(did.objects[Key.insertedObjects] == [permanent])
        #expect(did.objects[Key.updatedObjects] == [kept])
        #expect(did.objects[Key.deletedObjects] == [doomed])
        #expect(did.inserted == [permanent])
        #expect(did.permanentIDs == [temporary: permanent])
        #expect(didIDs.inserted == [permanent])
        #expect(didIDs.updated == [kept])
        #expect(didIDs.deleted == [doomed])
        #expect(didIDs.permanentIDs == [temporary: permanent])
        #expect(didIDs.objects.isEmpty)  // IDs only: safe to hand to other threads
    }

    @Test func eventsStreamDeliversChangeAndSaveEvents() async throws {
        let dir = try TemporaryDirectory()
        let context = try makeContext(dir, name: "streamed")
        context.transactionAuthor = "tester"
        var iterator = context.events.makeAsyncIterator()
        let (temporary, permanent) = try await context.perform { () throws -> (ObjectID, ObjectID) in
            let p = Person(context: context)
            p.name = "P"
            let temporary = p.objectID
            try context.save()
            return (temporary, p.objectID)
        }
        var events: [ContextEvent] = []
        for _ in 0..<5 {
            guard let e = await iterator.next() else { break }
            events.append(e)
            if e.kind == .didSave { break }
        }
        #expect(events.map(\.kind) == [.objectsDidChange, .willSave, .didSave])
        guard events.count == 3 else { return }
        #expect(events[0].inserted == [temporary])
        #expect(events[1].inserted == [temporary])
        #expect(events[2].inserted == [permanent])
        #expect(events[2].permanentIDs == [temporary: permanent])
        #expect(events[2].contextName == "streamed")
        #expect(events[2].transactionAuthor == "tester")
    }

    /// The save notifications list every object the save wrote, also when ObjectsDidChange
    /// reported only some of the inserts (earlier ones were posted by an earlier block) and
    /// when `willSave()` inserts more objects.
    @Test func saveNotificationsListEveryInsert() async throws {
        let dir = try TemporaryDirectory()
        let model = try ManagedObjectModel(types: [Spawner.self])
        let coordinator = try makeCoordinator(.sqlite, in: dir, model: model)
        let context = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: coordinator)
        let recorder = NotificationRecorder(
            [
                ManagedObjectContext.objectsDidChangeNotification, ManagedObjectContext.willSaveNotification,
                ManagedObjectContext.didSaveNotification
            ], object: context)
        defer { recorder.stop() }
        let first = await context.perform { () -> ObjectID in
            let a = Spawner(context: context)
            a.name = "a"
            return a.objectID
        }
        let (second, permanent) = try await context.perform { () throws -> (ObjectID, Set<ObjectID>) in
            let b = Spawner(context: context)
            b.name = "b"
            let id = b.objectID
            try context.save()
            return (id, Set(context.registeredObjects.map(\.objectID)))
        }
        let third = try await context.perform { () throws -> Set<ObjectID> in
            let p = Spawner(context: context)
            p.name = "parent"
            try context.save()
            return Set(context.registeredObjects.filter { ($0 as? Spawner)?.name != "a" && ($0 as? Spawner)?.name != "b" }.map(\.objectID))
        }
        typealias Key = ManagedObjectContext.NotificationKey
        let willSaves = recorder.changes.all.filter { $0.name == ManagedObjectContext.willSaveNotification }
        let didSaves = recorder.changes.all.filter { $0.name == ManagedObjectContext.didSaveNotification }
        #expect(willSaves.count == 2 && didSaves.count == 2)
        guard willSaves.count == 2, didSaves.count == 2 else { return }
        #expect(willSaves[0].inserted == [first, second])
        #expect(didSaves[0].inserted == permanent)
        #expect(didSaves[0].objects[Key.insertedObjects] == permanent)
        // The companion inserted by willSave is saved and listed.
        #expect(third.count == 2)
        #expect(didSaves[1].inserted == third)
        #expect(didSaves[1].objects[Key.insertedObjects] == third)
    }

    /// As in Core Data, a notification carries only the keys whose sets are not empty.
    @Test func notificationsCarryOnlyNonEmptyKeys() async throws {
        let dir = try TemporaryDirectory()
        let context = try makeContext(dir)
        let keys = Collector<Set<String>>()
        let token = NotificationCenter.default.addObserver(forName: ManagedObjectContext.didSaveNotification, object: context, queue: nil) {
            note in
            keys.append(Set((note.userInfo ?? [:]).keys.compactMap { $0.base as? String }))
        }
        defer { NotificationCenter.default.removeObserver(token) }
        try await context.perform {
            let p = Person(context: context)
            p.name = "Ada"
            try context.save()
            p.age = 3
            try context.save()
        }
        typealias K = ManagedObjectContext.NotificationKey
        #expect(
            keys.all == [
                [K.event, K.insertedObjectIDs, K.insertedObjects, K.permanentObjectIDs],
                [K.event, K.updatedObjectIDs, K.updatedObjects]
            ])
    }

    /// DidSave lists exactly the objects the save updated, also when ObjectsDidChange reported
    /// only some of them, or reported one whose change was undone before the save.
    @Test func didSaveListsExactlyTheUpdatedObjects() async throws {
        let dir = try TemporaryDirectory()
        let context = try makeContext(dir)
        let ids = try await context.perform { () throws -> [ObjectID] in
            let people = (0..<4).map { i -> Person in
                let p = Person(context: context)
                p.name = "P\(i)"
                return p
            }
            try context.save()
            return people.map(\.objectID)
        }
        let recorder = NotificationRecorder([ManagedObjectContext.didSaveNotification], object: context)
        defer { recorder.stop() }
        func person(_ i: Int) -> Person? { context.registeredObject(for: ids[i]) as? Person }
        // Changed across two blocks: the save's ObjectsDidChange reports only the last one.
        await context.perform {
            person(0)?.age = 1
            person(1)?.age = 1
        }
        try await context.perform {
            person(2)?.age = 1
            try context.save()
        }
        // A change undone before the save: reported by ObjectsDidChange, not saved.
        try await context.perform {
            person(0)?.age = 2
            person(3)?.age = 2
            person(3)?.age = 0
            try context.save()
        }
        typealias Key = ManagedObjectContext.NotificationKey
        let saves = recorder.changes.all
        #expect(saves.count == 2)
        guard saves.count == 2 else { return }
        #expect(saves[0].updated == Set(ids[0...2]))
        #expect(saves[0].objects[Key.updatedObjects] == Set(ids[0...2]))
        #expect(saves[1].updated == [ids[0]])
        #expect(saves[1].objects[Key.updatedObjects] == [ids[0]])
    }

    @Test func lifecycleHooks() async throws {
        let dir = try TemporaryDirectory()
        let model = try ManagedObjectModel(types: [Hooked.self])
        let coordinator = try makeCoordinator(.sqlite, in: dir, model: model)
        let context = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: coordinator)
        let ids = try await context.perform { () throws -> (ObjectID, ObjectID) in
            let a = Hooked(context: context)
            let b = Hooked(context: context)
            let bystander = Hooked(context: context)
            #expect(a.awakeFromInsertCount == 1 && a.name == "new")
            a.name = "a"
            b.name = "b"
            try context.save()
            #expect(a.awakeFromInsertCount == 1)
            #expect(a.willSaveCount == 1 && a.didSaveCount == 1 && b.willSaveCount == 1 && b.didSaveCount == 1)
            #expect(a.stamp == 1)  // set in willSave, and saved
            #expect(!context.hasChanges)
            // An update: only the changed object is told.
            a.name = "a2"
            try context.save()
            #expect(a.willSaveCount == 2 && a.didSaveCount == 2)
            #expect(b.willSaveCount == 1 && bystander.willSaveCount == 1 && bystander.didSaveCount == 1)
            // validateForUpdate refuses: nothing is saved, willSave/didSave are not called.
            a.name = "bad"
            do throws(CoherenceError) {
                try context.save()
                Issue.record("validateForUpdate should stop the save")
            } catch {
                #expect(error.code == .validation)
                #expect(error.underlyingErrors.count == 1)
            }
            #expect(a.willSaveCount == 2 && a.didSaveCount == 2)
            #expect(a.hasChanges && a.name == "bad")
            a.name = "a3"
            // prepareForDeletion runs at delete time; the deleted object is told about the save.
            context.delete(b)
            #expect(b.prepareForDeletionCount == 1)
            try context.save()
            #expect(b.willSaveCount == 2 && b.didSaveCount == 2)
            #expect(b.prepareForDeletionCount == 1)
            return (a.objectID, bystander.objectID)
        }
        let reader = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: try reopen(coordinator))
        try await reader.perform {
            let all = try reader.fetch(FetchRequest<Hooked>(sortBy: [SortDescriptor(\.name)]))
            #expect(all.map(\.name) == ["a3", "new"])
            let a = try #require(reader.existingObject(with: ids.0) as? Hooked)
            #expect(a.stamp == 3)
            #expect(a.awakeFromFetchCount == 1 && a.awakeFromInsertCount == 0)
            _ = a.name
            _ = try reader.fetch(FetchRequest<Hooked>())
            #expect(a.awakeFromFetchCount == 1)
        }
    }
}

@Suite("Context behaviour: merging saves")
struct ContextBehaviourMergeTests {
    /// Saves Ada (30) and Bob (40).
    static func seed(_ coordinator: PersistentStoreCoordinator) async throws -> (ada: ObjectID, bob: ObjectID) {
        try await ContextBehaviourFaultTests.seed(coordinator)
    }

    /// Loads Ada and Bob into `context` and gives Ada a local unsaved score.
    static func loadWithLocalEdit(_ context: ManagedObjectContext, _ ids: (ada: ObjectID, bob: ObjectID)) async throws {
        try await context.perform {
            let ada = try #require(context.existingObject(with: ids.ada) as? Person)
            ada.score = 7
            _ = try #require(context.existingObject(with: ids.bob) as? Person).name
        }
    }

    /// In `writer`: renames Ada, deletes Bob, inserts Cy; returns Cy's ID.
    static func writeElsewhere(_ writer: ManagedObjectContext, _ ids: (ada: ObjectID, bob: ObjectID)) async throws -> ObjectID {
        try await writer.perform {
            let ada = try #require(writer.existingObject(with: ids.ada) as? Person)
            ada.name = "Ada (elsewhere)"
            writer.delete(try writer.existingObject(with: ids.bob))
            let cy = Person(context: writer)
            cy.name = "Cy"
            try writer.save()
            return cy.objectID
        }
    }

    /// Checks the receiver after the merge: Ada reloaded with its local edit kept, Bob gone,
    /// Cy visible; then saves it without conflict.
    static func checkMerged(
        _ context: ManagedObjectContext, _ ids: (ada: ObjectID, bob: ObjectID),
        coordinator: PersistentStoreCoordinator
    ) async throws {
        try await context.perform {
            let ada = try #require(context.registeredObject(for: ids.ada) as? Person)
            #expect(ada.name == "Ada (elsewhere)")
            #expect(ada.score == 7)
            #expect(ada.isUpdated)
            #expect(context.registeredObject(for: ids.bob) == nil)
            #expect(try context.fetch(FetchRequest<Person>(sortBy: [SortDescriptor(\.name)])).map(\.name) == ["Ada (elsewhere)", "Cy"])
            try context.save()
        }
        let stored = try await storedPerson(coordinator, ids.ada)
        #expect(stored?.name == "Ada (elsewhere)" && stored?.score == 7)
    }

    @Test func mergeChangesFromContextDidSave() async throws {
        let dir = try TemporaryDirectory()
        let coordinator = try makeCoordinator(.sqlite, in: dir)
        let ids = try await Self.seed(coordinator)
        let receiver = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: coordinator, name: "receiver")
        let writer = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: coordinator, name: "writer")
        try await Self.loadWithLocalEdit(receiver, ids)
        let received = NotificationRecorder([ManagedObjectContext.objectsDidChangeNotification], object: receiver)
        defer { received.stop() }
        let forward = NotificationCenter.default.addObserver(forName: ManagedObjectContext.didSaveNotification, object: writer, queue: nil)
        { note in
            receiver.performAndWait { receiver.mergeChanges(fromContextDidSave: note) }
        }
        let cy = try await Self.writeElsewhere(writer, ids)
        NotificationCenter.default.removeObserver(forward)
        #expect(received.changes.count == 1)
        let change = try #require(received.changes.all.first)
        #expect(change.updated.contains(ids.ada))
        #expect(change.refreshed.contains(ids.ada))
        #expect(change.deleted == [ids.bob])
        #expect(change.inserted == [cy])
        try await Self.checkMerged(receiver, ids, coordinator: coordinator)
    }

    @Test func mergeChangesFromANotificationWithOnlyIDs() async throws {
        let dir = try TemporaryDirectory()
        let coordinator = try makeCoordinator(.sqlite, in: dir)
        let ids = try await Self.seed(coordinator)
        let receiver = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: coordinator, name: "receiver")
        let writer = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: coordinator, name: "writer")
        try await Self.loadWithLocalEdit(receiver, ids)
        let cy = try await Self.writeElsewhere(writer, ids)
        let received = NotificationRecorder([ManagedObjectContext.objectsDidChangeNotification], object: receiver)
        defer { received.stop() }
        await receiver.perform {
            typealias Key = ManagedObjectContext.NotificationKey
            let note = Notification(
                name: ManagedObjectContext.didSaveNotification, object: nil,
                userInfo: [
                    Key.insertedObjectIDs: Set([cy]), Key.updatedObjectIDs: Set([ids.ada]), Key.deletedObjectIDs: Set([ids.bob])
                ])
            receiver.mergeChanges(fromContextDidSave: note)
        }
        #expect(received.changes.all.first?.deleted == [ids.bob])
        try await Self.checkMerged(receiver, ids, coordinator: coordinator)
    }

    @Test func mergeChangesFromRemoteContextSave() async throws {
        let dir = try TemporaryDirectory()
        let coordinator = try makeCoordinator(.sqlite, in: dir)
        let ids = try await Self.seed(coordinator)
        let receiver = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: coordinator, name: "receiver")
        try await Self.loadWithLocalEdit(receiver, ids)
        // The change comes from another coordinator (as another process would make it).
        let remote = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: try reopen(coordinator), name: "remote")
        let cy = try await Self.writeElsewhere(remote, ids)
        let received = NotificationRecorder([ManagedObjectContext.objectsDidChangeNotification], object: receiver)
        defer { received.stop() }
        typealias Key = ManagedObjectContext.NotificationKey
        ManagedObjectContext.mergeChanges(
            fromRemoteContextSave: [
                Key.insertedObjectIDs: [cy], Key.updatedObjectIDs: [ids.ada], Key.deletedObjectIDs: [ids.bob]
            ], into: [receiver])
        #expect(received.changes.count == 1)
        #expect(received.changes.all.first?.updated.contains(ids.ada) == true)
        #expect(received.changes.all.first?.deleted == [ids.bob])
        try await Self.checkMerged(receiver, ids, coordinator: coordinator)
    }

    @Test func automaticMergeBetweenRootContexts() async throws {
        let dir = try TemporaryDirectory()
        let coordinator = try makeCoordinator(.sqlite, in: dir)
        let ids = try await Self.seed(coordinator)
        let receiver = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: coordinator, name: "auto")
        receiver.automaticallyMergesChangesFromParent = true
        let bystander = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: coordinator, name: "manual")
        let writer = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: coordinator, name: "writer")
        try await Self.loadWithLocalEdit(receiver, ids)
        try await Self.loadWithLocalEdit(bystander, ids)
        var events = receiver.events.makeAsyncIterator()
        _ = try await Self.writeElsewhere(writer, ids)
        var merged: ContextEvent?
        for _ in 0..<10 {
            guard let e = await events.next() else { break }
            if e.kind == .objectsDidChange && e.updated.contains(ids.ada) {
                merged = e
                break
            }
        }
        let event = try #require(merged)
        #expect(event.deleted.contains(ids.bob))
        try await Self.checkMerged(receiver, ids, coordinator: coordinator)
        // A context that does not merge automatically keeps what it loaded.
        let old = await bystander.perform { (bystander.registeredObject(for: ids.ada) as? Person)?.name }
        #expect(old == "Ada")
    }

    @Test func automaticMergeBetweenSiblingChildContexts() async throws {
        let dir = try TemporaryDirectory()
        let coordinator = try makeCoordinator(.sqlite, in: dir)
        let ids = try await Self.seed(coordinator)
        let parent = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: coordinator, name: "parent")
        let editor = ManagedObjectContext(concurrencyType: .privateQueue, parent: parent, name: "editor")
        let viewer = ManagedObjectContext(concurrencyType: .privateQueue, parent: parent, name: "viewer")
        viewer.automaticallyMergesChangesFromParent = true
        let seen = try await viewer.perform { try #require(viewer.existingObject(with: ids.ada) as? Person).name }
        #expect(seen == "Ada")
        var events = viewer.events.makeAsyncIterator()
        try await editor.perform {
            let ada = try #require(editor.existingObject(with: ids.ada) as? Person)
            ada.name = "Ada (editor)"
            try editor.save()  // into the parent only
        }
        var merged = false
        for _ in 0..<10 {
            guard let e = await events.next() else { break }
            if e.kind == .objectsDidChange && e.updated.contains(ids.ada) {
                merged = true
                break
            }
        }
        #expect(merged)
        let name = await viewer.perform { (viewer.registeredObject(for: ids.ada) as? Person)?.name }
        #expect(name == "Ada (editor)")
        // Not on disk until the parent saves.
        #expect(try await storedPerson(coordinator, ids.ada)?.name == "Ada")
        try await parent.perform { try parent.save() }
        #expect(try await storedPerson(coordinator, ids.ada)?.name == "Ada (editor)")
    }
}

/// Marks the main queue for the main-queue context test.
nonisolated(unsafe) let mainQueueMarker = DispatchSpecificKey<Int>()

@Suite("Context behaviour: concurrency")
struct ContextBehaviourConcurrencyTests {
    @Test func eightContextsSavingAtOnceLoseNothing() async throws {
        let dir = try TemporaryDirectory()
        let coordinator = try makeCoordinator(.sqlite, in: dir)
        let setup = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: coordinator)
        let existing = try await setup.perform { () throws -> [ObjectID] in
            let people = (0..<8).map { i -> Person in
                let p = Person(context: setup)
                p.name = "existing \(i)"
                return p
            }
            try setup.save()
            return people.map(\.objectID)
        }
        try await withThrowingTaskGroup(of: Void.self) { group in
            for worker in 0..<8 {
                group.addTask {
                    let context = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: coordinator, name: "worker \(worker)")
                    try await context.perform {
                        for j in 0..<100 {
                            let p = Person(context: context)
                            p.name = "w\(worker)-\(j)"
                            p.age = j
                        }
                        let mine = try #require(context.existingObject(with: existing[worker]) as? Person)
                        mine.age = 1000 + worker
                        try context.save()
                    }
                }
            }
            try await group.waitForAll()
        }
        let reader = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: try reopen(coordinator))
        try await reader.perform {
            let all = try reader.fetch(FetchRequest<Person>())
            #expect(all.count == 808)
            let names = Set(all.map(\.name))
            #expect(names.count == 808)
            for worker in 0..<8 {
                #expect(names.contains("w\(worker)-0") && names.contains("w\(worker)-99"))
                let p = try #require(reader.existingObject(with: existing[worker]) as? Person)
                #expect(p.age == 1000 + worker)
            }
        }
    }

    @Test func mainQueueContextRunsOnTheMainQueue() async throws {
        let dir = try TemporaryDirectory()
        let coordinator = try makeCoordinator(.sqlite, in: dir)
        let main = ManagedObjectContext(concurrencyType: .mainQueue, coordinator: coordinator, name: "main")
        // Under swift-testing on Linux the main queue may be drained by a worker thread (after
        // dispatch_main), so recognise it by a queue-specific value rather than Thread.isMainThread.
        DispatchQueue.main.setSpecific(key: mainQueueMarker, value: 1)
        let (onMain, count) = try await main.perform { () throws -> (Bool, Int) in
            let p = Person(context: main)
            p.name = "Main"
            try main.save()
            let onMainQueue = Thread.isMainThread || DispatchQueue.getSpecific(key: mainQueueMarker) == 1
            return (onMainQueue && main.isOnExecutor, try main.count(for: FetchRequest<Person>()))
        }
        #expect(onMain)
        #expect(count == 1)
        // A private context's work is not on the main thread.
        let background = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: coordinator)
        let offMain = await background.perform {
            DispatchQueue.getSpecific(key: mainQueueMarker) == nil && background.isOnExecutor && !main.isOnExecutor
        }
        #expect(offMain)
        #expect(
            try await storedPerson(
                coordinator,
                try #require(
                    await main.perform {
                        try? main.fetch(FetchRequest<Person>()).first?.objectID
                    }))?.name == "Main")
    }
}
