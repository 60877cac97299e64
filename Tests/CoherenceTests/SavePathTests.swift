import Foundation
import Testing
@testable import Coherence
@testable import CoherenceContext
@testable import CoherenceStore

/// An entity whose `willSave` puts its own change back when asked to (its row is then not
/// written: it has no change left).
final class Reverting: ManagedObject {
    @Attribute var name: String = ""
    @Attribute var count: Int = 0
    /// The value `willSave` puts back, when set.
    var revertTo: Int?

    override func willSave() {
        if let revertTo, count != revertTo { count = revertTo }
    }
}

@Suite("Save path: change sets and saved lists")
struct SavePathTests {
    @Test func changeSetNotesTheKeyOrderAndStoreOfItsUpdates() throws {
        let model = try makeTestModel()
        let person = try #require(model.entity(for: Person.self))
        let here = UUID(), there = UUID()
        func row(_ key: Int64, _ store: UUID?) -> RowUpdate {
            RowUpdate(
                objectID: ObjectID(entity: person, storeIdentifier: store, primaryKey: key), values: person.initialValues,
                changedSlots: [], references: [], expectedVersion: 1, cachedValues: nil)
        }
        var changes = StoreChangeSet()
        #expect(changes.updatesInKeyOrder == true)
        #expect(changes.updatesAllStored(in: here) == true)
        changes.appendUpdate(row(1, here))
        changes.appendUpdate(row(2, here))
        changes.appendUpdate(row(2, here))
        #expect(changes.updatesInKeyOrder == true)
        #expect(changes.updatesAllStored(in: here) == true)
        #expect(changes.updatesAllStored(in: there) == false)
        changes.appendUpdate(row(1, here))
        #expect(changes.updatesInKeyOrder == false)
        #expect(changes.updatesAllStored(in: here) == true)
        changes.appendUpdate(row(3, there))
        #expect(changes.updatesAllStored(in: here) == false)
        // A row added other than through `appendUpdate` makes both unknown.
        changes.updates.append(row(4, here))
        #expect(changes.updatesInKeyOrder == nil)
        #expect(changes.updatesAllStored(in: here) == nil)
        // Rows of objects without a store are in no store.
        var unsaved = StoreChangeSet()
        unsaved.appendUpdate(row(1, nil))
        #expect(unsaved.updatesAllStored(in: here) == false)
        // Assigned rows are unknown until noted again from an empty list.
        var assigned = StoreChangeSet()
        assigned.updates = [row(2, here), row(1, here)]
        #expect(assigned.updatesInKeyOrder == nil)
        assigned.updates = []
        assigned.appendUpdate(row(2, here))
        #expect(assigned.updatesInKeyOrder == true)
    }

    @Test(arguments: PostgreSQLTestServer.storeTypes)
    func objectsChangedAgainstKeyOrderSaveAtTheirVersions(_ type: StoreType) async throws {
        let dir = try TemporaryDirectory()
        let context = try makeContext(dir, type: type)
        try await context.perform {
            for i in 0..<6 {
                let p = Person(context: context)
                p.name = "p\(i)"
                p.age = i
            }
            try context.save()
        }
        let reader = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: context.persistentStoreCoordinator)
        let recorder = NotificationRecorder([ManagedObjectContext.didSaveNotification], object: reader)
        defer { recorder.stop() }
        try await reader.perform {
            let people = try reader.fetch(FetchRequest<Person>(sortBy: [SortDescriptor(\.name)]))
            // Changed from the highest key down: the store writes them in key order, and each
            // object still gets its own row's version.
            for p in people.reversed() { p.age += 10 }
            try reader.save()
            for p in people { #expect(p._state.version == 2) }
            #expect(recorder.changes.all.last?.updated == Set(people.map(\.objectID)))
            // A second save of every object checks those versions (a wrong one is a conflict).
            for p in people where p.age % 2 == 0 { p.age += 100 }
            for p in people.reversed() where p.age % 2 == 1 { p.age += 100 }
            try reader.save()
            for p in people { #expect(p._state.version == 3) }
        }
        let fresh = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: context.persistentStoreCoordinator)
        let ages = try await fresh.perform {
            try fresh.fetch(FetchRequest<Person>(sortBy: [SortDescriptor(\.name)])).map(\.age)
        }
        #expect(ages == [110, 111, 112, 113, 114, 115])
    }

    @Test func didSaveListsTheObjectsWrittenWhenWillSaveTakesAChangeBack() async throws {
        let dir = try TemporaryDirectory()
        let coordinator = PersistentStoreCoordinator(managedObjectModel: try ManagedObjectModel(types: [Reverting.self]))
        try coordinator.addPersistentStore(type: .sqlite, at: dir.file("r.sqlite"))
        let context = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: coordinator)
        let recorder = NotificationRecorder([ManagedObjectContext.didSaveNotification], object: context)
        defer { recorder.stop() }
        try await context.perform {
            for name in ["a", "b", "c", "d"] {
                let o = Reverting(context: context)
                o.name = name
            }
            try context.save()
            let objects = try context.fetch(FetchRequest<Reverting>(sortBy: [SortDescriptor(\.name)]))
            for o in objects { o.count = 1 }
            // Validation finds all four updated; willSave of the first and the third takes the
            // change back, so only the second and the fourth are written and reported.
            objects[0].revertTo = 0
            objects[2].revertTo = 0
            try context.save()
            let saved = try #require(recorder.changes.all.last)
            #expect(saved.updated == [objects[1].objectID, objects[3].objectID])
            #expect(saved.objects[ManagedObjectContext.NotificationKey.updatedObjects] == [objects[1].objectID, objects[3].objectID])
            #expect(objects.map(\._state.version) == [1, 2, 1, 2])
            // With every change kept, all are written and reported.
            for o in objects {
                o.revertTo = nil
                o.count = 2
            }
            try context.save()
            #expect(recorder.changes.all.last?.updated == Set(objects.map(\.objectID)))
            #expect(objects.map(\._state.version) == [2, 3, 2, 3])
        }
    }
}
