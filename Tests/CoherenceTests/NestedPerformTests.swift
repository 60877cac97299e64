import Foundation
import Testing
@testable import Coherence
@testable import CoherenceBase
@testable import CoherenceContext
@testable import CoherenceStore

/// `performAndWait` is re-entrant across contexts, as Core Data's is: a child's block called
/// from its parent's block reads through the parent (which the thread already runs) instead of
/// waiting for itself.
@Suite("Contexts: performAndWait inside another context's performAndWait")
struct NestedPerformTests {
    @Test(arguments: [false, true])
    func aChildFetchesFromInsideItsParentsBlock(_ parentHasChanges: Bool) throws {
        let dir = try TemporaryDirectory()
        let model = try ManagedObjectModel(types: [Town.self, Person.self, Club.self])
        let c = PersistentStoreCoordinator(managedObjectModel: model)
        try c.addPersistentStore(type: .sqlite, at: dir.file("s.sqlite"))
        let parent = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: c)
        let child = ManagedObjectContext(concurrencyType: .privateQueue, parent: parent)
        try parent.performAndWait {
            Town(context: parent).name = "saved"
            try parent.save()
            if parentHasChanges { Town(context: parent).name = "unsaved" }
        }
        let names = try parent.performAndWait {
            try child.performAndWait {
                #expect(parent.isOnExecutor)
                #expect(child.isOnExecutor)
                let towns = try child.fetch(FetchRequest<Town>())
                towns.first?.population = 3
                try child.save()  // into the parent, which this thread runs
                return Set(towns.map(\.name))
            }
        }
        #expect(names == (parentHasChanges ? ["saved", "unsaved"] : ["saved"]))
        try parent.performAndWait {
            let saved = try parent.fetch(FetchRequest<Town>(predicate: #Predicate { $0.name == "saved" }))
            #expect(saved.first?.population == 3)
        }
        // Off the blocks, neither executor is the thread's.
        #expect(!parent.isOnExecutor)
        #expect(!child.isOnExecutor)
    }

    @Test func aTaskStartedFromABlockDoesNotHoldTheExecutor() async throws {
        let dir = try TemporaryDirectory()
        let model = try ManagedObjectModel(types: [Town.self, Person.self, Club.self])
        let c = PersistentStoreCoordinator(managedObjectModel: model)
        try c.addPersistentStore(type: .sqlite, at: dir.file("s.sqlite"))
        let context = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: c)
        let task = context.performAndWait {
            Task.detached { context.isOnExecutor }
        }
        #expect(await task.value == false)
        let inherited = context.performAndWait {
            Task { context.isOnExecutor }
        }
        #expect(await inherited.value == false)
    }
}
